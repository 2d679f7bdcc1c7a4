/** The one frozen configuration every part of the proxy receives. Built by config/load.ts. */

export type ScheduleStyle = "context_first" | "generation_first";
export type RouterType = "round_robin" | "load_balancing";
export type LogLevel = "debug" | "info" | "warn" | "error";

export interface ProxyConfig {
  readonly host: string;
  readonly port: number;
  /** Normalised worker origins, `http(s)://host:port`, no trailing slash. */
  readonly contextServers: readonly string[];
  readonly generationServers: readonly string[];
  readonly schedule: ScheduleStyle;
  readonly contextRouter: RouterType;
  readonly generationRouter: RouterType;
  /** Extra attempts per upstream leg; 0 when TRTLLM_DISAGG_NO_RETRY=1. */
  readonly maxRetries: number;
  /** Pause between attempts of one leg. */
  readonly retryDelayMs: number;
  /** Non-streamed upstream calls: total bound. Streamed: bound on silence. */
  readonly requestTimeoutMs: number;
  readonly serverStartTimeoutMs: number;
  /** Interval of the start-up /health poll. */
  readonly serverStartPollMs: number;
  readonly streamStartWaitMs: number;
  readonly keepaliveIntervalMs: number;
  /** 0..255, part of every disagg_request_id. */
  readonly nodeId: number;
  readonly logLevel: LogLevel;
  readonly maxBodyBytes: number;
  /** Periodic worker /health checks after start-up. */
  readonly healthCheckIntervalMs: number;
  readonly healthCheckTimeoutMs: number;
  /** Consecutive failed checks that take a worker out of rotation. */
  readonly healthCheckFailures: number;
  /** Consecutive passed checks that bring an ejected (or new) worker back. */
  readonly healthCheckSuccesses: number;
  /** Admission: requests in flight at once (0: no limit); beyond it a 429 with Retry-After. */
  readonly maxInflight: number;
  /** Admission: reservations one worker may hold at once (0: no limit). */
  readonly maxInflightPerWorker: number;
  /** Admission: how long a request may wait for a free slot before its 429 (0: no wait). */
  readonly admissionWaitMs: number;
  /** SIGTERM: how long in-flight requests may run on before they are aborted. */
  readonly drainTimeoutMs: number;
  /** TLS for clients: PEM files, re-read on SIGHUP. Both or neither. */
  readonly tlsCertFile: string | undefined;
  readonly tlsKeyFile: string | undefined;
  /** PEM bundle trusted for https:// workers. */
  readonly workerCaFile: string | undefined;
  /** Sent to workers as a bearer token (the client's own key never is). */
  readonly workerApiKey: string | undefined;
  /** The -c file, kept so a reload can re-read it. */
  readonly configFile: string | undefined;
}

export const DEFAULTS = {
  host: "localhost",
  port: 8000,
  schedule: "context_first",
  contextRouter: "round_robin",
  generationRouter: "round_robin",
  maxRetries: 1,
  retryDelayMs: 1000,
  requestTimeoutMs: 180_000,
  serverStartTimeoutMs: 180_000,
  serverStartPollMs: 3000,
  streamStartWaitMs: 1000,
  keepaliveIntervalMs: 15_000,
  logLevel: "info",
  maxBodyBytes: 32 * 1024 * 1024,
  healthCheckIntervalMs: 5000,
  healthCheckTimeoutMs: 2000,
  healthCheckFailures: 2,
  healthCheckSuccesses: 1,
  drainTimeoutMs: 30_000,
  maxInflight: 0,
  maxInflightPerWorker: 0,
  admissionWaitMs: 0,
  tlsCertFile: undefined,
  tlsKeyFile: undefined,
  workerCaFile: undefined,
  workerApiKey: undefined,
} as const satisfies Partial<Record<keyof ProxyConfig, unknown>>;
