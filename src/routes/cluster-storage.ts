/**
 * Upstream's HTTP cluster storage routes, on the proxy's own port when disagg_cluster's
 * cluster_uri is http(s):// (tensorrt_llm/serve/cluster_storage.py @ 057d4a79 and @ b3809755):
 * POST /set (a StorageItem body), GET /get?key=, GET /expire?key=&ttl=,
 * GET /get_prefix?key_prefix=&keys_only=, DELETE /delete?key=. Every answer is
 * `{"result": …}`, 200 unless the result is false or None (then 400: upstream's jsonify), a
 * missing or malformed parameter is FastAPI's 422, a refused caller gets 403.
 *
 * Beyond upstream, what a web page can send is refused (security/browser-guard.ts): a body
 * that is not JSON (415), a request from another origin (403, logged), a Host that does not
 * name this proxy (421, in dispatch).
 */

import type { JsonObject } from "../json/json.ts";
import { STORE_LIMITS, StoreFullError, type ClusterStore } from "../discovery/index.ts";
import type { Connection, RouteDeps, StorageAnswer, StorageCall, StorageHolder } from "./deps.ts";
import { readClientBody } from "./client-body.ts";
import { crossSiteReason, isJsonContentType } from "../security/browser-guard.ts";
import type { ProxyError } from "../errors.ts";

/** A StorageItem body is a key, a value and three small fields. */
const MAX_SET_BODY_BYTES = STORE_LIMITS.maxKeyBytes + STORE_LIMITS.maxValueBytes + 1024;

/** `from`: the caller's address (a registration remembers it, so a worker registering 0.0.0.0 can be reached). */
type StorageHandler = (store: ClusterStore, request: Request, app: StorageDeps, from: string | undefined) => Response | Promise<Response>;

/** What the storage routes use of the routes' deps: the coordinator serves them too, with no App. */
export type StorageDeps = Pick<RouteDeps, "clusterStorage" | "logger" | "bodyLimits">;

/**
 * `{"result": …}` with upstream's status: 400 only for false and None; a valid empty result
 * (`""`, `{}`: an empty cluster's get_prefix) is a 200 (#19427, e0448239a5;
 * tests/unittest/disaggregated/test_cluster_storage_http_empty_results.py @ 85e2de13).
 */
function result(value: unknown): Response {
  const failed = value === null || value === undefined || value === false;
  return Response.json({ result: value ?? null }, { status: failed ? 400 : 200 });
}

/** A refusal before the handler (421, 405, 413…) in FastAPI's shape, as the store's other errors. */
export function storageErrorResponse(error: ProxyError): Response {
  return Response.json({ detail: error.message }, { status: error.status });
}

/** FastAPI's answer to a missing or malformed parameter. */
function unprocessable(message: string): Response {
  return Response.json({ detail: [{ type: "invalid", loc: ["query"], msg: message }] }, { status: 422 });
}

function param(request: Request, name: string): string | undefined {
  return new URL(request.url, "http://host").searchParams.get(name) ?? undefined;
}

function keyTooLong(key: string): boolean {
  return Buffer.byteLength(key) > STORE_LIMITS.maxKeyBytes;
}

/** Checks the caller, then runs the handler; without an HTTP cluster_uri the routes do not exist. */
function guarded(handler: StorageHandler) {
  return (deps: StorageDeps, request: Request, connection: Connection): Response | Promise<Response> => {
    const storage = deps.clusterStorage;
    if (storage === undefined) return Response.json({ detail: "Not Found" }, { status: 404 });
    const address = connection.peer();
    const refuse = (reason: string, status: number, detail: string): Response => {
      // At most once a minute per address and kind of refusal: a scanner cannot flood the log, and one kind does not hide another.
      if (storage.access.shouldLogRefusal(`${address ?? "unknown"} ${status}`)) {
        deps.logger.warn("cluster storage request refused", {
          path: new URL(request.url, "http://host").pathname,
          from: address ?? "unknown",
          reason,
        });
      }
      return Response.json({ detail }, { status });
    };
    // Without a Host the runtime gives the bare target, and no Origin can be this proxy's.
    const ownOrigin = request.url.startsWith("/") ? "" : new URL(request.url).origin;
    const crossSite = crossSiteReason(request.headers, ownOrigin);
    if (crossSite !== undefined) return refuse(crossSite, 403, "Forbidden: a cross-origin request (web page)");
    const verdict = storage.access.check(address, request.headers.get("authorization"));
    if (!verdict.allowed)
      return refuse(verdict.reason, 403, verdict.reason === "Invalid API key" ? "Invalid API key" : `Forbidden: ${verdict.reason}`);
    const type = request.headers.get("content-type");
    // A DELETE carries its key in the query, and upstream's client sends it with no body and no
    // type (HttpClusterStorageClient.delete); a page cannot send a cross-origin DELETE without a
    // CORS preflight, which this server never grants. Any body must be JSON, /set's always.
    if ((request.method === "POST" || type !== null) && !isJsonContentType(type)) {
      return refuse(`Content-Type ${(type ?? "none").slice(0, 100)}`, 415, "Unsupported Media Type: the body must be application/json");
    }
    const forward = storage.holder?.forward;
    if (forward === undefined) return handler(storage.store, request, deps, address);
    return forwarded(forward, request, deps, address, handler);
  };
}

/**
 * While this process takes the port over, the one it replaces holds the registrations: a call
 * is answered there (a heartbeat for a key registered with it meanwhile would get 400 here);
 * here only when it let go of them meanwhile (its answer undefined).
 */
async function forwarded(
  forward: NonNullable<StorageHolder["forward"]>,
  request: Request,
  deps: StorageDeps,
  from: string | undefined,
  handler: StorageHandler,
): Promise<Response> {
  const url = new URL(request.url, "http://storage");
  const body =
    request.method === "POST"
      ? JSON.stringify(await readClientBody(request, { ...deps.bodyLimits, maxBytes: MAX_SET_BODY_BYTES }))
      : undefined;
  const call: StorageCall = { method: request.method, target: url.pathname + url.search, body, from };
  const answer = await forward(call);
  if (answer !== undefined) return new Response(answer.body, { status: answer.status, headers: { "content-type": "application/json" } });
  const store = deps.clusterStorage?.store;
  return store === undefined ? Response.json({ detail: "Not Found" }, { status: 404 }) : handler(store, callRequest(call), deps, from);
}

function callRequest(call: StorageCall): Request {
  const headers: Record<string, string> = call.body === undefined ? {} : { "content-type": "application/json" };
  return new Request(`http://storage${call.target}`, {
    method: call.method,
    headers,
    ...(call.body === undefined ? {} : { body: call.body }),
  });
}

const HANDLERS: Readonly<Record<string, StorageHandler>> = {
  "/set": set,
  "/get": get,
  "/expire": expire,
  "/get_prefix": getPrefix,
  "/delete": remove,
};

/** A call another process forwarded (it checked the caller): answered from this process's store. */
export async function answerStorageCall(deps: StorageDeps, call: StorageCall): Promise<StorageAnswer> {
  const store = deps.clusterStorage?.store;
  const handler = HANDLERS[new URL(call.target, "http://storage").pathname];
  if (store === undefined || handler === undefined) return { status: 404, body: JSON.stringify({ detail: "Not Found" }) };
  try {
    const response = await handler(store, callRequest(call), deps, call.from);
    return { status: response.status, body: await response.text() };
  } catch (error) {
    const status = error instanceof Error && "status" in error && typeof error.status === "number" ? error.status : 500;
    return { status, body: JSON.stringify({ detail: error instanceof Error ? error.message : String(error) }) };
  }
}

async function set(store: ClusterStore, request: Request, deps: StorageDeps, from: string | undefined): Promise<Response> {
  const body = await readClientBody(request, { ...deps.bodyLimits, maxBytes: MAX_SET_BODY_BYTES });
  const item = storageItem(body);
  if (typeof item === "string") return unprocessable(item);
  if (keyTooLong(item.key) || Buffer.byteLength(item.value) > STORE_LIMITS.maxValueBytes) {
    return Response.json(
      { detail: `key or value too large (at most ${STORE_LIMITS.maxKeyBytes} and ${STORE_LIMITS.maxValueBytes} bytes)` },
      { status: 413 },
    );
  }
  try {
    return result(store.set({ ...item, from }));
  } catch (error) {
    if (error instanceof StoreFullError) {
      const storage = deps.clusterStorage;
      if (storage?.access.shouldLogRefusal(`full:${from ?? "unknown"}`))
        deps.logger.warn("cluster storage full: registration refused", {
          key: item.key.slice(0, 200),
          from: from ?? "unknown",
          detail: error.message,
        });
      return Response.json({ detail: error.message }, { status: 507 });
    }
    throw error;
  }
}

/** upstream's StorageItem: key required; value "", expire_time -1, ttl -1, overwrite_if_exists false by default. */
function storageItem(
  body: JsonObject,
): { key: string; value: string; ttl: number; expireTime: number; overwriteIfExists: boolean } | string {
  const { key, value = "", ttl = -1, expire_time: expireTime = -1, overwrite_if_exists: overwrite = false } = body;
  if (typeof key !== "string") return "key: a string is required";
  if (typeof value !== "string" && value !== null) return "value: must be a string";
  if (!(typeof ttl === "number" || ttl === null) || !(typeof expireTime === "number" || expireTime === null))
    return "ttl, expire_time: must be integers";
  if (typeof overwrite !== "boolean" && overwrite !== null) return "overwrite_if_exists: must be a boolean";
  return { key, value: value ?? "", ttl: ttl ?? -1, expireTime: expireTime ?? -1, overwriteIfExists: overwrite ?? false };
}

function get(store: ClusterStore, request: Request): Response {
  const key = param(request, "key");
  if (key === undefined) return unprocessable("key: field required");
  return result(store.get(key) ?? null);
}

function expire(store: ClusterStore, request: Request): Response {
  const key = param(request, "key");
  const ttl = param(request, "ttl");
  if (key === undefined || ttl === undefined) return unprocessable("key and ttl: fields required");
  if (!/^-?\d+$/.test(ttl)) return unprocessable("ttl: a valid integer is required");
  return result(store.expire(key, Number(ttl)));
}

/** FastAPI's bool query parsing. */
const TRUE_WORDS = new Set(["1", "true", "on", "yes", "t", "y"]);
const FALSE_WORDS = new Set(["0", "false", "off", "no", "f", "n"]);

function getPrefix(store: ClusterStore, request: Request): Response {
  const prefix = param(request, "key_prefix");
  if (prefix === undefined) return unprocessable("key_prefix: field required");
  const keysOnly = (param(request, "keys_only") ?? "false").toLowerCase();
  if (!TRUE_WORDS.has(keysOnly) && !FALSE_WORDS.has(keysOnly)) return unprocessable("keys_only: a valid boolean is required");
  return result(store.getPrefix(prefix, TRUE_WORDS.has(keysOnly)));
}

function remove(store: ClusterStore, request: Request): Response {
  const key = param(request, "key");
  if (key === undefined) return unprocessable("key: field required");
  return result(store.delete(key));
}

export const clusterSet = guarded(set);
export const clusterGet = guarded(get);
export const clusterExpire = guarded(expire);
export const clusterGetPrefix = guarded(getPrefix);
export const clusterDelete = guarded(remove);
