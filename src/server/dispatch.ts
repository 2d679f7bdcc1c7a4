import { asProxyError, ProxyError } from "../errors.ts";
import type { Logger } from "../observability/logger.ts";
import { openAiErrorResponse } from "../routes/errors.ts";
import type { App } from "./app.ts";

export type Handler = (app: App, request: Request) => Response | Promise<Response>;

/** path → method → handler. Paths are matched without the query string. */
export type RouteTable = Readonly<Record<string, Readonly<Partial<Record<string, Handler>>>>>;

export interface Dispatch {
  /** Answers a request; never throws. `waits` tells whether it may be slow (no idle timeout then). */
  handle(request: Request): Promise<Response>;
  waits(request: Request): boolean;
}

export function createDispatch(app: App, routes: RouteTable, slowPaths: ReadonlySet<string>, logger: Logger): Dispatch {
  return {
    waits: (request) => request.method === "POST" && slowPaths.has(pathOf(request)),
    async handle(request) {
      const byMethod = routes[pathOf(request)];
      const handler = byMethod?.[request.method];
      try {
        if (!byMethod) throw new ProxyError("NOT_FOUND", 404, `No route for ${pathOf(request)}`);
        if (!handler) throw new ProxyError("METHOD_NOT_ALLOWED", 405, `Method ${request.method} is not allowed on ${pathOf(request)}`);
        return await handler(app, request);
      } catch (thrown) {
        const error = asProxyError(thrown);
        if (error.code === "INTERNAL") logger.error("unexpected failure", { path: pathOf(request), error: thrown });
        else logger.debug("request rejected", { path: pathOf(request), code: error.code, error: error.message });
        return openAiErrorResponse(error);
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
