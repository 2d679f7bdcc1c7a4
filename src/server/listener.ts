import { readFileSync } from "node:fs";
import type { ProxyConfig } from "../config/types.ts";
import type { Logger } from "../observability/logger.ts";
import type { Dispatch } from "./dispatch.ts";
import { keepAliveBound, startQuietSweep, type KeepAliveBound } from "./keep-alive.ts";

/** Far above any accepted body; the routes' own bound (--max-body-bytes) is what refuses. */
const RUNTIME_BODY_CAP_BYTES = 1024 ** 3;

export interface ListenerOptions {
  /** Overrides the idle bound, in the runtime's own seconds (tests shorten it to prove slow routes are exempt). */
  readonly idleTimeoutS?: number;
  /** While true, every answer says `Connection: close` (an upgrade moves kept-alive clients to new connections). */
  readonly closeConnections?: () => boolean;
}

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
 * (else `host`). Idle connections are bound by server_keep_alive_timeout (keep-alive.ts), which
 * also bounds a new connection's first request head (slowloris); routes that stream or wait on
 * a worker lift the bound while they run and put it back as their answer is written.
 */
export function listen(
  config: ProxyConfig,
  port: number,
  dispatch: Dispatch,
  logger: Logger,
  options: ListenerOptions,
): Bun.Server<undefined> {
  const host = config.bindHost ?? config.host;
  try {
    return serve(config, host, port, dispatch, logger, boundOf(config, options), options.closeConnections);
  } catch (error) {
    const code = typeof error === "object" && error !== null && "code" in error && typeof error.code === "string" ? error.code : undefined;
    throw new ListenError(host, port, code, error);
  }
}

function boundOf(config: ProxyConfig, options: ListenerOptions): KeepAliveBound {
  const given = options.idleTimeoutS;
  return given === undefined
    ? keepAliveBound(config.serverKeepAliveTimeoutS)
    : { runtimeS: given, firstRequestS: given, quietCloseS: undefined };
}

function serve(
  config: ProxyConfig,
  host: string,
  port: number,
  dispatch: Dispatch,
  logger: Logger,
  bound: KeepAliveBound,
  closeConnections: (() => boolean) | undefined,
): Bun.Server<undefined> {
  let lastRequestAt = 0;
  const listener = Bun.serve({
    hostname: host,
    port,
    // Always shared (SO_REUSEPORT): a TLS reload starts a second listener with the new
    // certificate on the same port, and an upgrade starts the new process beside the old
    // (--take-over). The kernel lets only the same user share it, and only when every listener
    // asks to; the per-port control socket (control-socket.ts) refuses a second copy started by mistake.
    reusePort: true,
    ...tlsOptions(config),
    development: false,
    idleTimeout: bound.firstRequestS,
    // The runtime's own cap answers an empty 413 before any handler runs: keep it far above
    // --max-body-bytes so that the routes refuse (JSON in their dialect, logged, counted)
    // and close the connection instead of reading the rest.
    maxRequestBodySize: Math.max(config.maxBodyBytes * 4, RUNTIME_BODY_CAP_BYTES),
    fetch(request, server) {
      lastRequestAt = performance.now();
      // The connection's bound once this answer is written (only a call made before then counts);
      // the server's own idleTimeout already is that bound unless they differ (above 252 s).
      if (bound.runtimeS !== bound.firstRequestS) server.timeout(request, bound.runtimeS);
      const answer = dispatch.handle(
        request,
        () => {
          server.timeout(request, 0);
          return () => server.timeout(request, bound.runtimeS);
        },
        () => server.requestIP(request)?.address,
      );
      return closeConnections?.() === true ? withConnectionClose(answer) : answer;
    },
    error(error) {
      logger.error("unhandled server error", { error });
      const body = { object: "error", message: "Internal server error", type: "InternalServerError", param: null, code: 500 };
      return Response.json(body, { status: 500 });
    },
  });
  if (bound.quietCloseS !== undefined) startQuietSweep(listener, bound.quietCloseS, () => lastRequestAt);
  return listener;
}

/**
 * The answer with `Connection: close`, which Bun honours by closing the connection after it:
 * the client opens its next connection, which the new process accepts.
 */
async function withConnectionClose(answer: Response | Promise<Response>): Promise<Response> {
  const response = await answer;
  try {
    response.headers.set("connection", "close");
    return response;
  } catch {
    // Headers of some responses are immutable: the same status, headers and body, rebuilt.
    const headers = new Headers(response.headers);
    headers.set("connection", "close");
    return new Response(response.body, { status: response.status, statusText: response.statusText, headers });
  }
}

function tlsOptions(config: ProxyConfig): { tls?: { cert: string; key: string } } {
  if (config.tlsCertFile === undefined || config.tlsKeyFile === undefined) return {};
  return { tls: { cert: readFileSync(config.tlsCertFile, "utf8"), key: readFileSync(config.tlsKeyFile, "utf8") } };
}
