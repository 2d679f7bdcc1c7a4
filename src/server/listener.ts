import { readFileSync } from "node:fs";
import type { ProxyConfig } from "../config/types.ts";
import type { Logger } from "../observability/logger.ts";
import type { Dispatch } from "./dispatch.ts";

/** Idle bound for requests that do not stream or wait on a worker (slowloris guard). */
const IDLE_TIMEOUT_S = 30;

export interface ListenerOptions {
  /** Overrides the idle bound (tests shorten it to prove slow routes are exempt). */
  readonly idleTimeoutS?: number;
}

/** The Bun.serve listener: TLS when configured, Bun's error page never shown, idle bound per route. */
export function listen(config: ProxyConfig, port: number, dispatch: Dispatch, logger: Logger, options: ListenerOptions): Bun.Server<undefined> {
  return Bun.serve({
    hostname: config.host,
    port,
    // With TLS a reload starts a second listener with the new certificate on the same port.
    reusePort: config.tlsCertFile !== undefined,
    ...tlsOptions(config),
    development: false,
    idleTimeout: options.idleTimeoutS ?? config.serverKeepAliveTimeoutS ?? IDLE_TIMEOUT_S,
    maxRequestBodySize: config.maxBodyBytes + 1024 * 1024,
    fetch(request, server) {
      return dispatch.handle(request, () => server.timeout(request, 0));
    },
    error(error) {
      logger.error("unhandled server error", { error });
      const body = { object: "error", message: "Internal server error", type: "InternalServerError", param: null, code: 500 };
      return Response.json(body, { status: 500 });
    },
  });
}

function tlsOptions(config: ProxyConfig): { tls?: { cert: string; key: string } } {
  if (config.tlsCertFile === undefined || config.tlsKeyFile === undefined) return {};
  return { tls: { cert: readFileSync(config.tlsCertFile, "utf8"), key: readFileSync(config.tlsKeyFile, "utf8") } };
}
