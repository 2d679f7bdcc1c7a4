import { asProxyError, ProxyError } from "../errors.ts";
import { openAiErrorResponse } from "../routes/errors.ts";
import type { Handler } from "../routes/deps.ts";
import type { App } from "./app.ts";

export interface RouteEntry {
  readonly methods: Readonly<Partial<Record<string, Handler>>>;
  /**
   * Who may call it when client keys are set: everyone (health probes), or metrics scrapers
   * unless --protect-metrics; "dashboard" is "metrics" that also takes the key as a Basic password.
   */
  readonly access?: "open" | "metrics" | "dashboard";
  /** Failures before a request context exists, in the route's dialect (default: OpenAI's envelope). */
  readonly renderError?: (error: ProxyError) => Response;
}

/** path → its methods. Paths are matched without the query string. */
export type RouteTable = Readonly<Record<string, RouteEntry>>;

export interface Dispatch {
  /** Answers a request; never throws. */
  handle(request: Request, keepOpen: () => void): Promise<Response>;
}

export function createDispatch(app: App, routes: RouteTable): Dispatch {
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
        // Unknown paths share one label: a label per scanned URL would grow without bound.
        app.ends.rejected(entry ? path : "unmatched", path, error, thrown);
        return (entry?.renderError ?? openAiErrorResponse)(error);
      }
    },
  };
}

function authorised(app: App, entry: RouteEntry, request: Request): boolean {
  const keys = app.clientKeys;
  if (keys === undefined || entry.access === "open") return true;
  if ((entry.access === "metrics" || entry.access === "dashboard") && !app.config.protectMetrics) return true;
  return keys.allows(request.headers) || (entry.access === "dashboard" && keys.allowsBasic(request.headers));
}

function pathOf(request: Request): string {
  const url = request.url;
  const start = url.indexOf("/", url.indexOf("//") + 2);
  const end = url.indexOf("?", start);
  return start < 0 ? "/" : url.slice(start, end < 0 ? undefined : end);
}
