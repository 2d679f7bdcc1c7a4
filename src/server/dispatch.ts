import { asProxyError, ProxyError } from "../errors.ts";
import type { Logger } from "../observability/logger.ts";
import { openAiErrorResponse } from "../routes/errors.ts";
import type { App } from "./app.ts";
import { logRejection } from "./request-log.ts";

export type Handler = (app: App, request: Request) => Response | Promise<Response>;

export interface RouteEntry {
  readonly methods: Readonly<Partial<Record<string, Handler>>>;
  /** Failures before a request context exists, in the route's dialect (default: OpenAI's envelope). */
  readonly renderError?: (error: ProxyError) => Response;
}

/** path → its methods. Paths are matched without the query string. */
export type RouteTable = Readonly<Record<string, RouteEntry>>;

export interface Dispatch {
  /** Answers a request; never throws. */
  handle(request: Request): Promise<Response>;
  /** Whether the request may wait on a worker for long (no idle timeout then). */
  waits(request: Request): boolean;
}

export function createDispatch(app: App, routes: RouteTable, slowPaths: ReadonlySet<string>, logger: Logger): Dispatch {
  return {
    waits: (request) => request.method === "POST" && slowPaths.has(pathOf(request)),
    async handle(request) {
      const path = pathOf(request);
      const entry = routes[path];
      const handler = entry?.methods[request.method];
      try {
        if (!entry) throw new ProxyError("NOT_FOUND", 404, `No route for ${path}`);
        if (!handler) throw new ProxyError("METHOD_NOT_ALLOWED", 405, `Method ${request.method} is not allowed on ${path}`);
        return await handler(app, request);
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

function pathOf(request: Request): string {
  const url = request.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const end = url.indexOf("?", start);
  return start < 0 ? "/" : url.slice(start, end < 0 ? undefined : end);
}
