/** The one frozen configuration every part of the proxy receives. Built by config/load.ts. */

import type { DiscoveryConfig } from "./discovery-config.ts";
import type { ModelAlias } from "./model-aliases.ts";

export type { ModelAlias };

/** A worker's part in a disaggregated request: prefill (context) or decode (generation). */
export type Role = "context" | "generation";

export type ScheduleStyle = "context_first" | "generation_first";
export type RouterType =
  | "round_robin"
  | "load_balancing"
  | "conversation"
  | "kv_cache_aware"
  | "centralized_kv_cache_aware"
  | "remote_http";
export type SubagentAffinityScope = "context" | "both";
export type LogLevel = "debug" | "info" | "warn" | "error";

/** Arguments of a role's router, from the YAML `router:` block; a missing one takes the router's default. */
export interface RouterOptions {
  /** conversation: share of a prompt's blocks a previous prompt must match to continue its conversation (0.75). */
  readonly matchThreshold?: number | undefined;
  /** conversation (128) and kv_cache_aware (32): tokens per hashed block. */
  readonly tokensPerBlock?: number | undefined;
  /** conversation: conversations remembered, least recently used forgotten first (100000). */
  readonly maxSessions?: number | undefined;
  /** conversation: leading tokens (×4 characters of text) left out of the hashes, e.g. a shared system prompt (0). */
  readonly hashSkipCount?: number | undefined;
  /** conversation: hash the request's token ids when it carries them, instead of its text (false). */
  readonly useTokenIds?: boolean | undefined;
  /** kv_cache_aware: in-flight requests that count as a full worker in the score (64). */
  readonly maxBatchSize?: number | undefined;
  /** load_balancing: weigh in-flight requests by their prompt tokens instead of counting them (false). */
  readonly useTokens?: boolean | undefined;
  /** remote_http: the router server's base URL (`remote_url`, required). */
  readonly remoteUrl?: string | undefined;
  /** remote_http: bound on each call to the router server (`request_timeout_s`, 5 s). */
  readonly requestTimeoutMs?: number | undefined;
}

export interface ProxyConfig {
  /**
   * The address this proxy is known by (YAML `hostname`, --host): what --report-addr writes and
   * /cluster_info and the logs show. It is also the bound address unless `bindHost` is set.
   */
  readonly host: string;
  /** YAML `bind_host`, --bind-host: the address the socket binds when it differs from the advertised `host`. */
  readonly bindHost: string | undefined;
  readonly port: number;
  /** Normalised worker origins, `http(s)://host:port`, no trailing slash. */
  readonly contextServers: readonly string[];
  readonly generationServers: readonly string[];
  readonly schedule: ScheduleStyle;
  readonly contextRouter: RouterType;
  readonly generationRouter: RouterType;
  readonly routerOptions: { readonly context: RouterOptions; readonly generation: RouterOptions };
  /** Extra attempts per upstream leg; 0 when TRTLLM_DISAGG_NO_RETRY=1. */
  readonly maxRetries: number;
  /** Pause between attempts of one leg. */
  readonly retryDelayMs: number;
  /** Non-streamed upstream calls: total bound. Streamed: bound on silence. */
  readonly requestTimeoutMs: number;
  /**
   * A pooled worker connection is never reused once idle this long: below the workers' own
   * keep-alive (uvicorn's timeout_keep_alive, 5 s in trtllm-serve), so the proxy drops it first.
   */
  readonly workerKeepAliveMs: number;
  /** Consecutive failed attempts that eject a worker from rotation (0: no passive ejection). */
  readonly outlierFailures: number;
  /** A worker's first ejection; its n-th lasts n times this. */
  readonly outlierEjectionMs: number;
  /** Most of a role's workers ejected at once, in percent (at least one; never the last in rotation). */
  readonly outlierMaxEjectionPercent: number;
  /**
   * A streamed generation leg whose first bytes take longer fails (restarted once on a fresh
   * pair; an outlier failure of its worker); 0: bounded by requestTimeoutMs alone.
   */
  readonly firstTokenTimeoutMs: number;
  readonly serverStartTimeoutMs: number;
  /** Interval of the start-up /health poll. */
  readonly serverStartPollMs: number;
  readonly streamStartWaitMs: number;
  readonly keepaliveIntervalMs: number;
  /** 0..255, part of every disagg_request_id. */
  readonly nodeId: number;
  /** TRTLLM_DISAGG_WORKER_PROCESS_ID (0..63), also part of every disagg_request_id. */
  readonly processId: number;
  readonly logLevel: LogLevel;
  readonly maxBodyBytes: number;
  /** Hostile-worker bounds: a non-streamed worker answer, and one SSE event of a worker stream. */
  readonly maxAnswerBytes: number;
  readonly maxSseEventBytes: number;
  /** Slowloris floor: a body slower than this on average after the grace period is cut (408). */
  readonly bodyMinBytesPerSecond: number;
  readonly bodyGraceMs: number;
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
  /**
   * num_workers: event loops serving the port (Bun Workers with reusePort), sharing one load
   * view. 1 unless the routers and discovery allow more (config/load.ts says when not).
   */
  readonly numWorkers: number;
  /** Admission: how long a request may wait for a free slot before its 429 (0: no wait). */
  readonly admissionWaitMs: number;
  /** SIGTERM: how long in-flight requests may run on before they are aborted. */
  readonly drainTimeoutMs: number;
  /** --take-over: start beside the proxy serving this port and replace it once ready (process/take-over.ts). */
  readonly takeOver: boolean;
  /** --runtime-dir: where the per-port control socket lives; undefined: from the environment (process/runtime-dir.ts). */
  readonly runtimeDir: string | undefined;
  /** TLS for clients: PEM files, re-read on SIGHUP. Both or neither. */
  readonly tlsCertFile: string | undefined;
  readonly tlsKeyFile: string | undefined;
  /** PEM bundle trusted for https:// workers. */
  readonly workerCaFile: string | undefined;
  /** Sent to workers as a bearer token (the client's own key never is). */
  readonly workerApiKey: string | undefined;
  /** Client keys, one per line (re-read on SIGHUP); with DISAGG_PROXY_API_KEYS, auth is on when either is set. */
  readonly apiKeyFile: string | undefined;
  /** DISAGG_PROXY_API_KEYS as read at start-up (comma-separated client keys). */
  readonly apiKeysFromEnv: string | undefined;
  /** Also require a key on /metrics and /prometheus/metrics. */
  readonly protectMetrics: boolean;
  /** Serve the live status page (/dashboard); --no-dashboard turns it off. */
  readonly dashboard: boolean;
  /** Shared HMAC key for x-trtllm-disagg-auth (YAML internal_request_auth_key or --internal-auth-key-file). */
  readonly internalAuthKey: string | undefined;
  /** Workers found through etcd instead of (or besides) the static lists. */
  readonly discovery: DiscoveryConfig | undefined;
  /** conditional_disagg_config: skip the context phase when the generation worker holds nearly all of the prompt. */
  readonly conditionalDisagg: { readonly maxLocalPrefillLength: number } | undefined;
  /** allow_request_chat_template: a request carrying chat_template is refused (400) unless this is set. */
  readonly allowRequestChatTemplate: boolean;
  /** gen_strip_message_history: generation requests carry only the last chat message. */
  readonly genStripMessageHistory: boolean;
  /** gen_tokids_ctxbytes: context workers return prompt_token_ids_b64, relayed as is. */
  readonly genTokidsCtxbytes: boolean;
  /** TRTLLM_DISAGG_BENCHMARK_GEN_ONLY=1: every request goes to a generation worker with fixed hand-off parameters. */
  readonly benchmarkGenerationOnly: boolean;
  /** TRTLLM_REQUEST_TRACE_DIR: each accepted request and its end as JSONL lines here (upstream's request trace). */
  readonly requestTraceDir: string | undefined;
  /** server_keep_alive_timeout: seconds (a fraction allowed) an idle client keep-alive connection is kept at least. */
  readonly serverKeepAliveTimeoutS: number;
  /** No node id was given and a cluster is configured: claim one in etcd at start-up. */
  readonly claimNodeId: boolean;
  /** The -c file, kept so a reload can re-read it. */
  readonly configFile: string | undefined;
  /** return_perf_metrics: a client sending X-TRTLLM-return-metrics: 1 gets the merged per-request metrics. */
  readonly returnPerfMetrics: boolean;
  /** perf_metrics_output_dir: one JSONL record per finished request is written here (workers are asked for metrics). */
  readonly perfMetricsOutputDir: string | undefined;
  /** perf_metrics_max_requests: > 0 turns on GET /perf_metrics (workers' records joined, at most this many kept). */
  readonly perfMetricsMaxRequests: number;
  /** otlp_config.otlp_traces_endpoint: OTLP/HTTP (JSON) URL spans are exported to. */
  readonly otlpTracesEndpoint: string | undefined;
  /** --report-addr: once listening, the bound host:port is written to this file. */
  readonly reportAddrFile: string | undefined;
  /** --cluster-allow-from / cluster_allow_from: networks (besides loopback) whose workers may use the HTTP cluster storage. */
  readonly clusterAllowFrom: readonly string[];
  /** --trusted-proxy: networks whose X-Forwarded-For names the client in the request log (request/client-address.ts). */
  readonly trustedProxies: readonly string[];
  /** --client-address-header: where a trusted proxy names the client (request/client-address.ts). */
  readonly clientAddressHeader: string;
  /** --allowed-host: names besides IP literals, localhost and `host` accepted in Host on /dashboard, /cluster_info and the cluster storage. */
  readonly allowedHosts: readonly string[];
  /** --allow-link-local-workers: discovered workers may be at link-local or metadata addresses. */
  readonly allowLinkLocalWorkers: boolean;
  /** --cluster-key-file (else internal_request_auth_key): Bearer key the HTTP cluster storage requires. */
  readonly clusterKey: string | undefined;
  /** --worker-msgpack: bodies to workers in msgpack (X-TRTLLM-Msgpack: 1), as trtllm-serve's newest proxy sends them. */
  readonly workerMsgpack: boolean;
  /**
   * --worker-protocol: "auto" learns each worker's version from GET /version (or its etcd
   * registration); a version (e.g. 1.3.0rc18) is taken as every worker's (workers/protocol.ts).
   */
  readonly workerProtocol: string;
  /**
   * conversation_affinity_header_for_subagents: the gateway header naming a sub-agent's parent
   * session; its value becomes the request's routing key (docs/source/features/subagent-routing.md).
   */
  readonly subagentAffinityHeader: string | undefined;
  /** subagent_affinity_scope: the fleets placed by the parent's key, "context" or "both". */
  readonly subagentAffinityScope: SubagentAffinityScope;
  /** --responses-fallback: a Responses request no worker can disaggregate gets a 501 ("error") or runs on one worker ("aggregated"). */
  readonly responsesFallback: "error" | "aggregated";
  /** --model-alias / model_aliases: client model names (exact, or `prefix*`) mapped to served model ids; flags first. */
  readonly modelAliases: readonly ModelAlias[];
  /** --worker-load-interval-ms: how often each worker's own load report (GET /prometheus/metrics) is read; 0 = never. */
  readonly workerLoadIntervalMs: number;
  /** --max-worker-queue: with reports on, a role whose every worker reports more waiting requests is refused (429/529); 0 = never. */
  readonly maxWorkerQueue: number;
  /**
   * --disagg-coordinator-url / disagg_coordinator_url: the coordinator that places the stateful
   * routers' legs (`POST /select`, `/finish`, routing/coordinator-client.ts); unset: placed here.
   */
  readonly disaggCoordinatorUrl: string | undefined;
  /** --coordinator-timeout-ms: one placement's wait on the coordinator before it is placed here; also how often an unreachable one is asked again. */
  readonly coordinatorTimeoutMs: number;
}

/** The demo's own port: not serve's 8000, so a demo started beside a proxy is not mistaken for it. */
export const DEMO_PORT = 8080;

export const DEFAULTS = {
  host: "localhost",
  bindHost: undefined,
  port: 8000,
  schedule: "context_first",
  contextRouter: "round_robin",
  generationRouter: "round_robin",
  routerOptions: Object.freeze({ context: Object.freeze({}), generation: Object.freeze({}) }),
  maxRetries: 1,
  retryDelayMs: 1000,
  requestTimeoutMs: 180_000,
  workerKeepAliveMs: 4000,
  outlierFailures: 5,
  outlierEjectionMs: 30_000,
  outlierMaxEjectionPercent: 50,
  firstTokenTimeoutMs: 0,
  serverStartTimeoutMs: 180_000,
  serverStartPollMs: 3000,
  streamStartWaitMs: 1000,
  keepaliveIntervalMs: 15_000,
  logLevel: "info",
  maxBodyBytes: 32 * 1024 * 1024,
  maxAnswerBytes: 64 * 1024 * 1024,
  maxSseEventBytes: 1024 * 1024,
  bodyMinBytesPerSecond: 1024,
  bodyGraceMs: 10_000,
  healthCheckIntervalMs: 5000,
  healthCheckTimeoutMs: 2000,
  healthCheckFailures: 2,
  healthCheckSuccesses: 1,
  drainTimeoutMs: 30_000,
  takeOver: false,
  runtimeDir: undefined,
  maxInflight: 0,
  maxInflightPerWorker: 0,
  numWorkers: 1,
  admissionWaitMs: 0,
  tlsCertFile: undefined,
  tlsKeyFile: undefined,
  workerCaFile: undefined,
  workerApiKey: undefined,
  apiKeyFile: undefined,
  protectMetrics: false,
  dashboard: true,
  apiKeysFromEnv: undefined,
  discovery: undefined,
  conditionalDisagg: undefined,
  processId: 0,
  allowRequestChatTemplate: false,
  genStripMessageHistory: false,
  genTokidsCtxbytes: false,
  benchmarkGenerationOnly: false,
  requestTraceDir: undefined,
  // trtllm-serve's default (DisaggServerConfig.server_keep_alive_timeout, #16430).
  serverKeepAliveTimeoutS: 10,
  claimNodeId: false,
  internalAuthKey: undefined,
  returnPerfMetrics: false,
  perfMetricsOutputDir: undefined,
  perfMetricsMaxRequests: 0,
  otlpTracesEndpoint: undefined,
  workerMsgpack: false,
  reportAddrFile: undefined,
  clusterAllowFrom: Object.freeze([]),
  trustedProxies: Object.freeze([]),
  clientAddressHeader: "x-forwarded-for",
  allowedHosts: Object.freeze([]),
  allowLinkLocalWorkers: false,
  clusterKey: undefined,
  workerProtocol: "auto",
  responsesFallback: "error",
  modelAliases: Object.freeze([]),
  subagentAffinityHeader: undefined,
  subagentAffinityScope: "context",
  workerLoadIntervalMs: 0,
  maxWorkerQueue: 0,
  disaggCoordinatorUrl: undefined,
  coordinatorTimeoutMs: 1000,
} as const satisfies Partial<Record<keyof ProxyConfig, unknown>>;
