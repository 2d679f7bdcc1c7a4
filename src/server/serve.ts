import type { ProxyConfig } from "../config/types.ts";
import type { Logger } from "../observability/logger.ts";
import { clusterInfo, health, models, version } from "../routes/info.ts";
import { countTokens, messages } from "../routes/messages.ts";
import { chatCompletions, completions } from "../routes/openai.ts";
import { responses } from "../routes/responses.ts";
import { waitForWorkers } from "../workers/startup.ts";
import { createApp, type App } from "./app.ts";
import { createDispatch, type RouteTable } from "./dispatch.ts";

/** Idle bound for requests that do not stream or wait on a worker (slowloris guard). */
const IDLE_TIMEOUT_S = 30;

export interface ServerOptions {
  /** Overrides the idle bound (tests shorten it to prove slow routes are exempt). */
  readonly idleTimeoutS?: number;
}

export interface RunningProxy {
  readonly url: URL;
  readonly app: App;
  /** Polls the workers until all are ready or the start timeout passed; true when ready. */
  waitForWorkers(): Promise<boolean>;
  stop(): Promise<void>;
}

const ROUTES: RouteTable = {
  "/v1/completions": { POST: completions },
  "/v1/chat/completions": { POST: chatCompletions },
  "/v1/responses": { POST: responses },
  "/v1/messages": { POST: messages },
  "/v1/messages/count_tokens": { POST: countTokens },
  "/v1/models": { GET: models },
  "/health": { GET: health },
  "/version": { GET: version },
  "/cluster_info": { GET: clusterInfo },
};
const SLOW_PATHS = new Set(["/v1/completions", "/v1/chat/completions", "/v1/responses", "/v1/messages"]);

/** Starts listening at once; /health says 503 until the workers are found ready. */
export function startProxy(config: ProxyConfig, logger: Logger, appVersion: string, options: ServerOptions = {}): RunningProxy {
  const app = createApp(config, logger, appVersion);
  const dispatch = createDispatch(app, ROUTES, SLOW_PATHS, logger);
  const server = Bun.serve({
    hostname: config.host,
    port: config.port,
    development: false,
    idleTimeout: options.idleTimeoutS ?? IDLE_TIMEOUT_S,
    maxRequestBodySize: config.maxBodyBytes + 1024 * 1024,
    fetch(request, srv) {
      // Before the first await: a prefill may keep this request silent for minutes.
      if (dispatch.waits(request)) srv.timeout(request, 0);
      return dispatch.handle(request);
    },
    error(error) {
      logger.error("unhandled server error", { error });
      return new Response(JSON.stringify({ object: "error", message: "Internal server error", type: "InternalServerError", param: null, code: 500 }), {
        status: 500,
        headers: { "content-type": "application/json" },
      });
    },
  });
  const stopping = new AbortController();
  return {
    url: server.url,
    app,
    waitForWorkers: () => waitForWorkers(app.placement.pool, config, logger, stopping.signal),
    async stop() {
      stopping.abort();
      await server.stop(true);
    },
  };
}
