/**
 * Upstream's HTTP cluster storage routes, on the proxy's own port when disagg_cluster's
 * cluster_uri is http(s):// (tensorrt_llm/serve/cluster_storage.py @ 057d4a79 and @ b3809755):
 * POST /set (a StorageItem body), GET /get?key=, GET /expire?key=&ttl=,
 * GET /get_prefix?key_prefix=&keys_only=, DELETE /delete?key=. Every answer is
 * `{"result": …}`, 200 when the result is truthy and 400 otherwise (upstream's jsonify), a
 * missing or malformed parameter is FastAPI's 422, a refused caller gets 403.
 */

import { isJsonObject, type JsonObject } from "../json.ts";
import { STORE_LIMITS, StoreFullError, type ClusterStore } from "../discovery/index.ts";
import type { KeepOpen, RouteDeps } from "./deps.ts";
import { readClientBody } from "./client-body.ts";

/** A StorageItem body is a key, a value and three small fields. */
const MAX_SET_BODY_BYTES = STORE_LIMITS.maxKeyBytes + STORE_LIMITS.maxValueBytes + 1024;

type StorageHandler = (store: ClusterStore, request: Request, app: RouteDeps) => Response | Promise<Response>;

/** `{"result": …}` with upstream's status: 200 when truthy ("" , {}, false and null are not). */
function result(value: unknown): Response {
  const truthy = value !== null && value !== undefined && value !== false && value !== "" && !(isJsonObject(value) && Object.keys(value).length === 0);
  return Response.json({ result: value ?? null }, { status: truthy ? 200 : 400 });
}

/** FastAPI's answer to a missing or malformed parameter. */
function unprocessable(message: string): Response {
  return Response.json({ detail: [{ type: "invalid", loc: ["query"], msg: message }] }, { status: 422 });
}

function param(request: Request, name: string): string | undefined {
  return new URL(request.url).searchParams.get(name) ?? undefined;
}

function keyTooLong(key: string): boolean {
  return Buffer.byteLength(key) > STORE_LIMITS.maxKeyBytes;
}

/** Checks the caller, then runs the handler; without an HTTP cluster_uri the routes do not exist. */
function guarded(handler: StorageHandler) {
  return (deps: RouteDeps, request: Request, _keepOpen: KeepOpen, peer?: () => string | undefined): Response | Promise<Response> => {
    const storage = deps.clusterStorage;
    if (storage === undefined) return Response.json({ detail: "Not Found" }, { status: 404 });
    const address = peer?.();
    const verdict = storage.access.check(address, request.headers.get("authorization"));
    if (!verdict.allowed) {
      if (storage.access.shouldLogRefusal(address ?? "unknown")) {
        deps.logger.warn("cluster storage request refused", { path: new URL(request.url).pathname, from: address ?? "unknown", reason: verdict.reason });
      }
      return Response.json({ detail: verdict.reason === "Invalid API key" ? "Invalid API key" : `Forbidden: ${verdict.reason}` }, { status: 403 });
    }
    return handler(storage.store, request, deps);
  };
}

async function set(store: ClusterStore, request: Request, deps: RouteDeps, from: string | undefined): Promise<Response> {
  const body = await readClientBody(request, { ...deps.bodyLimits, maxBytes: MAX_SET_BODY_BYTES });
  const item = storageItem(body);
  if (typeof item === "string") return unprocessable(item);
  if (keyTooLong(item.key) || Buffer.byteLength(item.value) > STORE_LIMITS.maxValueBytes) {
    return Response.json({ detail: `key or value too large (at most ${STORE_LIMITS.maxKeyBytes} and ${STORE_LIMITS.maxValueBytes} bytes)` }, { status: 413 });
  }
  try {
    return result(store.set({ ...item, from }));
  } catch (error) {
    if (error instanceof StoreFullError) return Response.json({ detail: error.message }, { status: 507 });
    throw error;
  }
}

/** upstream's StorageItem: key required; value "", expire_time -1, ttl -1, overwrite_if_exists false by default. */
function storageItem(body: JsonObject): { key: string; value: string; ttl: number; expireTime: number; overwriteIfExists: boolean } | string {
  const { key, value = "", ttl = -1, expire_time: expireTime = -1, overwrite_if_exists: overwrite = false } = body;
  if (typeof key !== "string") return "key: a string is required";
  if (typeof value !== "string" && value !== null) return "value: must be a string";
  if (!(typeof ttl === "number" || ttl === null) || !(typeof expireTime === "number" || expireTime === null)) return "ttl, expire_time: must be integers";
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

export const clusterSet = (deps: RouteDeps, request: Request, keepOpen: KeepOpen, peer?: () => string | undefined): Response | Promise<Response> =>
  guarded((store, req, routeDeps) => set(store, req, routeDeps, peer?.()))(deps, request, keepOpen, peer);
export const clusterGet = guarded(get);
export const clusterExpire = guarded(expire);
export const clusterGetPrefix = guarded(getPrefix);
export const clusterDelete = guarded(remove);
