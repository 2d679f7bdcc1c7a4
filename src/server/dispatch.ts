import type { Clients } from "../request/client-address.ts";
import type { ProxyConfig } from "../config/types.ts";
import { asProxyError, bodyTooLarge, ProxyError } from "../errors.ts";
import { openAiErrorResponse } from "../routes/errors.ts";
import type { Handler, RouteDeps } from "../routes/deps.ts";
import type { ClientKeys } from "../security/api-keys.ts";
import type { HostCheck } from "../security/browser-guard.ts";
import type { RequestEnds } from "../request/request-end.ts";
import type { ConnectionHost, HeldConnection, KeepAlive } from "./keep-alive.ts";

export interface RouteEntry {
  readonly methods: Readonly<Partial<Record<string, Handler>>>;
  /**
   * Who may call it when client keys are set: everyone (health probes), or metrics scrapers
   * unless --protect-metrics; "dashboard" is "metrics" that also takes the key as a Basic password.
   */
  readonly access?: "open" | "metrics" | "dashboard";
  /**
   * Only answered to a Host that names this proxy (security/browser-guard.ts), else 421: the
   * routes a DNS-rebound page must not read or write. Model routes take any Host.
   */
  readonly checkHost?: boolean;
  /** Failures before a request context exists, in the route's dialect (default: OpenAI's envelope). */
  readonly renderError?: (error: ProxyError) => Response;
}

/** What the dispatch reads of the configuration: --protect-metrics (default false: /metrics and the dashboard are open to scrapers). */
export type DispatchSettings = Pick<ProxyConfig, "protectMetrics">;

/** What the dispatch uses of the app (server/app.ts): the routes' deps, and what it checks and counts before a route runs. */
export interface DispatchDeps extends RouteDeps {
  readonly settings: RouteDeps["settings"] & DispatchSettings;
  /** Which Host names the routes that check it answer to. */
  readonly hosts: HostCheck;
  /** Client keys; undefined when client authentication is off. */
  readonly clientKeys: ClientKeys | undefined;
  /** Where a request refused before it had a context is counted and logged. */
  readonly ends: Pick<RequestEnds, "rejected">;
  /** Who sends each request: its connection is noted here, for its log line. */
  readonly clients: Clients;
}

/** path → its methods. Paths are matched without the query string; a key ending in `/*` takes every path under it. */
export type RouteTable = Readonly<Record<string, RouteEntry>>;

/**
 * The front door, a fetch function as Bun.serve calls it: the request's connection facts are
 * gathered once (keep-alive.ts), then its route answers. It never throws.
 */
export interface Dispatch {
  readonly fetch: (request: Request, server: ConnectionHost) => Promise<Response>;
  /** The idle bound its connections keep, which the listener sets and sweeps by. */
  readonly keepAlive: KeepAlive;
}

/** `keepAlive`: the idle bound of the server's connections, and whether answers close them (an upgrade's old side). */
export function createDispatch(app: DispatchDeps, routes: RouteTable, keepAlive: KeepAlive): Dispatch {
  const handle = async (request: Request, connection: HeldConnection): Promise<Response> => {
    const path = pathOf(request);
    const route = routeOf(routes, path);
    const entry = route === undefined ? undefined : routes[route];
    const handler = entry?.methods[request.method];
    app.clients.note(request, connection);
    try {
      // RFC 9112 §3.2: a request with more than one Host is a 400. The runtime joins them with a comma, which no host name holds.
      if (request.headers.get("host")?.includes(",") === true)
        throw new ProxyError("BAD_REQUEST", 400, "The request carries more than one Host header");
      if (!entry) throw new ProxyError("NOT_FOUND", 404, `No route for ${path}`);
      if (!handler) throw new ProxyError("METHOD_NOT_ALLOWED", 405, `Method ${request.method} is not allowed on ${path}`);
      // Refused here rather than by the runtime, whose 413 has no body, no log line and no count.
      if (entry.checkHost === true && !app.hosts.allows(request.headers.get("host"))) throw misdirected(app, request);
      if (declaredLength(request) > app.bodyLimits.maxBytes) throw bodyTooLarge(app.bodyLimits.maxBytes);
      if (!authorised(app, entry, request)) throw new ProxyError("UNAUTHORIZED", 401, "Invalid or missing API key");
      return await handler(app, request, connection);
    } catch (thrown) {
      connection.restoreIfLifted();
      const error = asProxyError(thrown);
      // Unknown paths share one label: a label per scanned URL would grow without bound.
      app.ends.rejected(route ?? "unmatched", path, error, thrown, app.clients.of(request));
      const answer = (entry?.renderError ?? openAiErrorResponse)(error);
      // RFC 9110 §15.5.6: a 405 lists the methods the target supports.
      if (entry && error.code === "METHOD_NOT_ALLOWED") answer.headers.set("allow", Object.keys(entry.methods).join(", "));
      return answer;
    }
  };
  return {
    keepAlive,
    fetch: (request, server) => {
      const answer = handle(request, keepAlive.connectionOf(request, server));
      return keepAlive.closing ? withConnectionClose(answer) : answer;
    },
  };
}

/** The route key a path is answered by: itself, else the longest `prefix/*` it lies under (one label per route, not per path). */
function routeOf(routes: RouteTable, path: string): string | undefined {
  if (routes[path] !== undefined) return path;
  let best: string | undefined;
  for (const key of Object.keys(routes)) {
    if (
      key.endsWith("/*") &&
      path.startsWith(key.slice(0, -1)) &&
      path.length > key.length - 1 &&
      (best === undefined || key.length > best.length)
    )
      best = key;
  }
  return best;
}

/**
 * The answer with `Connection: close`, which Bun honours by closing the connection after it:
 * the client opens its next connection, which the new process accepts.
 */
async function withConnectionClose(answer: Promise<Response>): Promise<Response> {
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

function authorised(app: DispatchDeps, entry: RouteEntry, request: Request): boolean {
  return mayCall(app, entry.access, request);
}

/** Whether the request's credentials open a route of this access class under the current keys (read again on SIGHUP). */
export function mayCall(app: DispatchDeps, access: RouteEntry["access"], request: Request): boolean {
  const keys = app.clientKeys;
  if (keys === undefined || access === "open") return true;
  if ((access === "metrics" || access === "dashboard") && !app.settings.protectMetrics) return true;
  // The key as a Basic password too where a browser or a scraper's basic_auth presents it (`curl -u :KEY`), on read-only routes.
  return keys.allows(request.headers) || ((access === "dashboard" || access === "metrics") && keys.allowsBasic(request.headers));
}

/** Whether the request shows a valid client key (Bearer, x-api-key, or a Basic password): the operator's, not anyone's. */
export function showsKey(app: DispatchDeps, request: Request): boolean {
  const keys = app.clientKeys;
  return keys !== undefined && (keys.allows(request.headers) || keys.allowsBasic(request.headers));
}

function misdirected(app: DispatchDeps, request: Request): ProxyError {
  const host = (request.headers.get("host") ?? "").slice(0, 200);
  return new ProxyError(
    "MISDIRECTED",
    421,
    `This proxy does not answer to Host ${JSON.stringify(host)} here: use an IP address, ${app.hosts.names().join(", ")} or a name given with --allowed-host`,
  );
}

function declaredLength(request: Request): number {
  const header = request.headers.get("content-length");
  return header === null ? 0 : Number(header);
}

/**
 * The path without the query. The runtime builds `request.url` from the Host header, dot
 * segments resolved; without one (HTTP/1.0, or an empty Host) it is the bare request target
 * ("/a/../b", not "http://host/b"), resolved here the same way so both route alike.
 */
function pathOf(request: Request): string {
  const url = request.url.startsWith("/") ? new URL(request.url, "http://host").pathname : request.url;
  const start = url.startsWith("/") ? 0 : url.indexOf("/", url.indexOf("//") + 2);
  if (start < 0) return "/";
  const end = url.indexOf("?", start);
  return url.slice(start, end < 0 ? undefined : end);
}
