import { readFileSync } from "node:fs";
import type { ProxyConfig } from "../config/types.ts";
import type { Logger } from "../observability/logger.ts";
import type { Dispatch } from "./dispatch.ts";
import { startQuietSweep } from "./keep-alive.ts";

/** Far above any accepted body; the routes' own bound (--max-body-bytes) is what refuses. */
const RUNTIME_BODY_CAP_BYTES = 1024 ** 3;

/**
 * What the listener reads of the configuration, with the flags' defaults (config/types.ts
 * DEFAULTS): host "localhost", bindHost none (bind `host`), no TLS, maxBodyBytes 32 MiB.
 */
export type ListenerSettings = Pick<ProxyConfig, "host" | "bindHost" | "tlsCertFile" | "tlsKeyFile" | "maxBodyBytes"> & {
  /**
   * The port is this listener's alone (no SO_REUSEPORT): the kernel refuses a port anything
   * already serves. The demo binds so; serve shares its port (TLS reload, take-over, event loops).
   * @default false
   */
  readonly exclusivePort?: boolean | undefined;
};

/** The listening socket could not be opened: names the address and the system's reason. */
export class ListenError extends Error {
  readonly port: number;
  /** The system error code (EADDRINUSE, EADDRNOTAVAIL, EACCES, EINVAL, …), when there is one. */
  readonly code: string | undefined;

  constructor(host: string, port: number, code: string | undefined, cause: unknown) {
    super(`cannot listen on ${host.includes(":") ? `[${host}]` : host}:${port}: ${reasonOf(code, cause)}`, { cause });
    this.port = port;
    this.code = code;
  }
}

const REASONS: Readonly<Record<string, string>> = {
  EADDRINUSE: "the port is already in use",
  EADDRNOTAVAIL: "the address is not one of this machine's",
  EACCES: "permission denied (ports below 1024 need privileges)",
  // Bun reports a hostname that does not resolve as EINVAL on listen (measured on Bun 1.4.5).
  EINVAL: "hostname does not resolve",
};

function reasonOf(code: string | undefined, cause: unknown): string {
  return (code === undefined ? undefined : REASONS[code]) ?? (cause instanceof Error ? cause.message : String(cause));
}

/**
 * The Bun.serve listener: TLS when configured, Bun's error page never shown. It binds `bindHost`
 * (else `host`). Bun.serve calls the dispatch itself; idle connections are bound by
 * server_keep_alive_timeout (keep-alive.ts), which also bounds a new connection's first
 * request head (slowloris); routes that stream or wait on a worker lift the bound while they run.
 */
export function listen(settings: ListenerSettings, port: number, dispatch: Dispatch, logger: Logger): Bun.Server<undefined> {
  const host = settings.bindHost ?? settings.host;
  try {
    return serve(settings, host, port, dispatch, logger);
  } catch (error) {
    const code = typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined;
    throw new ListenError(host, port, code, error);
  }
}

function serve(settings: ListenerSettings, host: string, port: number, dispatch: Dispatch, logger: Logger): Bun.Server<undefined> {
  const { bound } = dispatch.keepAlive;
  const listener = Bun.serve({
    hostname: host,
    port,
    // Shared (SO_REUSEPORT) unless exclusive: a TLS reload starts a second listener with the new
    // certificate on the same port, and an upgrade starts the new process beside the old
    // (--take-over). The kernel lets only the same user share it, and only when every listener
    // asks to; serve probes the port and its control socket (control-socket.ts) before it listens.
    reusePort: settings.exclusivePort !== true,
    ...tlsOptions(settings),
    development: false,
    idleTimeout: bound.firstRequestS,
    // The runtime's own cap answers an empty 413 before any handler runs: keep it far above
    // --max-body-bytes so that the routes refuse (JSON in their dialect, logged, counted)
    // and close the connection instead of reading the rest.
    maxRequestBodySize: Math.max(settings.maxBodyBytes * 4, RUNTIME_BODY_CAP_BYTES),
    fetch: dispatch.fetch,
    error(error) {
      logger.error("unhandled server error", { error });
      const body = { object: "error", message: "Internal server error", type: "InternalServerError", param: null, code: 500 };
      return Response.json(body, { status: 500 });
    },
  });
  if (bound.quietCloseS !== undefined) startQuietSweep(listener, bound.quietCloseS, () => dispatch.keepAlive.lastRequestAt);
  return listener;
}

function tlsOptions(settings: ListenerSettings): { tls?: { cert: string; key: string } } {
  if (settings.tlsCertFile === undefined || settings.tlsKeyFile === undefined) return {};
  return { tls: { cert: readFileSync(settings.tlsCertFile, "utf8"), key: readFileSync(settings.tlsKeyFile, "utf8") } };
}
