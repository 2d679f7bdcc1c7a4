import { asProxyError, ProxyError } from "../errors.ts";
import type { Logger } from "../observability/logger.ts";
import { openAiErrorResponse } from "../routes/errors.ts";
import type { App } from "./app.ts";
import { logRejection } from "./request-log.ts";

/**
 * `keepOpen` lifts the server's idle timeout for this request: a route calls it once the
 * client's body is in, so a prefill may keep the request silent for minutes while a client
 * trickling its body (slowloris) is still cut.
 */
export type Handler = (app: App, request: Request, keepOpen: () => void) => Response | Promise<Response>;

export interface RouteEntry {
  readonly methods: Readonly<Partial<Record<string, Handler>>>;
  /** Who may call it when client keys are set: everyone (health probes), or metrics scrapers unless --protect-metrics. */
  readonly access?: "open" | "metrics";
  /** Failures before a request context exists, in the route's dialect (default: OpenAI's envelope). */
  readonly renderError?: (error: ProxyError) => Response;
}

/** path → its methods. Paths are matched without the query string. */
export type RouteTable = Readonly<Record<string, RouteEntry>>;

export interface Dispatch {
  /** Answers a request; never throws. */
  handle(request: Request, keepOpen: () => void): Promise<Response>;
}

export function createDispatch(app: App, routes: RouteTable, logger: Logger): Dispatch {
  return {
    async handle(request, keepOpen) {
      const path = pathOf(request);
      const entry = routes[path];
      const handler = entry?.methods[request.method];
      try {
        if (!entry) throw new ProxyError("NOT_FOUND", 404, `No route for ${path}`);
        if (!handler) throw new ProxyError("METHOD_NOT_ALLOWED", 405, `Method ${request.method} is not allowed on ${path}`);
        if (!authorised(app, entry, request)) throw new ProxyError("UNAUTHORIZED", 401, "Invalid or missing API key");
        return await handler(app, request, keepOpen);
      } catch (thrown) {
        const error = asProxyError(thrown);
        if (error.code === "INTERNAL") logger.error("unexpected failure", { path, error: thrown });
        else logRejection(logger, path, error);
        // Unknown paths share one label: a label per scanned URL would grow without bound.
        const route = entry ? path : "unmatched";
        app.metrics.validationFailed(route);
        app.metrics.requestEnded(route, error.outcome, error.status);
        return (entry?.renderError ?? openAiErrorResponse)(error);
      }
    },
  };
}

function authorised(app: App, entry: RouteEntry, request: Request): boolean {
  const keys = app.clientKeys;
  if (keys === undefined || entry.access === "open") return true;
  if (entry.access === "metrics" && !app.config.protectMetrics) return true;
  return keys.allows(request.headers);
}

function pathOf(request: Request): string {
  const url = request.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const end = url.indexOf("?", start);
  return start < 0 ? "/" : url.slice(start, end < 0 ? undefined : end);
}
