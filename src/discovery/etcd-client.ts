/**
 * The few etcd v3 calls discovery needs, over etcd's JSON gateway with fetch: no dependency,
 * nothing read from disk at run time, so it works the same inside the compiled binary.
 */

import { parseJsonBounded, readJsonBounded, readPrefix } from "../json/bounded-read.ts";
import {
  decode,
  encode,
  errorOf,
  int64At,
  isObject,
  linesOf,
  listAt,
  objectAt,
  prefixRangeEnd,
  stringAt,
  type JsonObject,
} from "./etcd-wire.ts";

export class EtcdError extends Error {
  /** The gRPC status code etcd answered (5 = not found), when it answered one. */
  readonly code: number | undefined;
  constructor(message: string, code?: number, options?: ErrorOptions) {
    super(message, options);
    this.name = "EtcdError";
    this.code = code;
  }
}

export interface KeyValue {
  readonly key: string;
  readonly value: string;
  readonly modRevision: bigint;
}

export interface WatchChange extends KeyValue {
  readonly type: "put" | "delete";
}

export type WatchMessage =
  | { kind: "created"; revision: bigint }
  | { kind: "changes"; changes: WatchChange[] }
  | { kind: "progress"; revision: bigint }
  | { kind: "compacted"; compactRevision: bigint }
  | { kind: "canceled"; reason: string };

const DEFAULT_TIMEOUT_MS = 5000;

/**
 * A range answer holds every key of the prefix: ~350 bytes a worker registration (base64 and
 * revisions included), so this bound holds ~48,000 workers. Every other call answers a few
 * hundred bytes.
 */
export const RANGE_ANSWER_BYTES = 16 * 1024 * 1024;
const CALL_ANSWER_BYTES = 64 * 1024;
/** An error answer is only read for its message. */
const ERROR_ANSWER_BYTES = 64 * 1024;

/**
 * `endpoint` is `http://host:port`, or a comma list of them: a call that cannot connect moves
 * the client on to the next endpoint for the following call.
 */
export class EtcdClient {
  readonly #endpoints: readonly string[];
  readonly #timeoutMs: number;
  #current = 0;

  constructor(endpoint: string, timeoutMs = DEFAULT_TIMEOUT_MS) {
    this.#endpoints = endpoint
      .split(",")
      .map((item) => item.trim().replace(/\/+$/, ""))
      .filter((item) => item !== "");
    if (this.#endpoints.length === 0) throw new TypeError(`No etcd endpoint in "${endpoint}"`);
    this.#timeoutMs = timeoutMs;
  }

  /** Every key starting with `prefix`, and the revision of that view. */
  async range(prefix: string): Promise<{ revision: bigint; kvs: KeyValue[] }> {
    const body = await this.#call(
      "/v3/kv/range",
      { key: encode(prefix), range_end: prefixRangeEnd(prefix) },
      undefined,
      RANGE_ANSWER_BYTES,
    );
    return { revision: int64At(objectAt(body, "header"), "revision"), kvs: listAt(body, "kvs").map(keyValueOf) };
  }

  async put(key: string, value: string, lease?: string): Promise<void> {
    await this.#call("/v3/kv/put", { key: encode(key), value: encode(value), ...(lease === undefined ? {} : { lease }) });
  }

  /** Puts only if the key does not exist; true when it was put. */
  async putIfAbsent(key: string, value: string, lease: string): Promise<boolean> {
    const body = await this.#call("/v3/kv/txn", {
      compare: [{ key: encode(key), result: "EQUAL", target: "CREATE", create_revision: "0" }],
      success: [{ request_put: { key: encode(key), value: encode(value), lease } }],
    });
    return body["succeeded"] === true;
  }

  /** Deletes one key; resolves with the number of keys deleted (0 or 1). */
  async delete(key: string): Promise<number> {
    const body = await this.#call("/v3/kv/deleterange", { key: encode(key) });
    return Number(int64At(body, "deleted"));
  }

  async grantLease(ttlSeconds: number): Promise<{ id: string; ttlSeconds: number }> {
    const body = await this.#call("/v3/lease/grant", { TTL: String(ttlSeconds) });
    const id = stringAt(body, "ID");
    if (id === undefined) throw new EtcdError("etcd granted a lease without an ID");
    return { id, ttlSeconds: Number(int64At(body, "TTL")) };
  }

  /** Refreshes a lease; resolves with its TTL in seconds, 0 when the lease is gone (expired or revoked). */
  async keepAlive(lease: string): Promise<number> {
    const body = await this.#call("/v3/lease/keepalive", { ID: lease });
    return Number(int64At(objectAt(body, "result"), "TTL"));
  }

  /** Revokes a lease, deleting its keys; a lease already gone is fine. */
  async revoke(lease: string, timeoutMs?: number): Promise<void> {
    try {
      await this.#call("/v3/lease/revoke", { ID: lease }, timeoutMs);
    } catch (error) {
      if (!(error instanceof EtcdError && error.code === 5)) throw error;
    }
  }

  /** A cheap call that succeeds only while the endpoint answers. */
  async ping(timeoutMs?: number): Promise<void> {
    await this.#call("/v3/maintenance/status", {}, timeoutMs);
  }

  /**
   * Watches every key starting with `prefix` from `startRevision` on. The stream has no idle
   * timeout (a quiet prefix is normal): the caller aborts `signal` when etcd stops answering.
   * Returns when etcd closes the stream; throws when it cannot connect or the stream breaks.
   */
  async *watch(prefix: string, startRevision: bigint, signal: AbortSignal): AsyncGenerator<WatchMessage> {
    const request = {
      create_request: {
        key: encode(prefix),
        range_end: prefixRangeEnd(prefix),
        start_revision: String(startRevision),
        progress_notify: true,
      },
    };
    const response = await this.#fetch("/v3/watch", request, signal, false);
    if (!response.ok || response.body === null) throw await failureOf(response);
    for await (const line of linesOf(response.body)) yield watchMessageOf(await parseLine(line));
  }

  /** One unary call; its answer is read within `maxBytes` and the shape bounds worker answers have (json/bounded-read.ts). */
  async #call(path: string, request: JsonObject, timeoutMs = this.#timeoutMs, maxBytes = CALL_ANSWER_BYTES): Promise<JsonObject> {
    const response = await this.#fetch(path, request, AbortSignal.timeout(timeoutMs), undefined);
    if (!response.ok) throw await failureOf(response);
    const body: unknown = await readJsonBounded(
      response,
      maxBytes,
      (what, cause) => new EtcdError(`etcd's answer to ${path} ${what}`, undefined, { cause }),
    );
    const error = errorOf(body);
    if (error !== undefined) throw new EtcdError(error.message, error.code);
    if (!isObject(body)) throw new EtcdError(`etcd answered ${path} with something that is not a JSON object`);
    return body;
  }

  async #fetch(path: string, request: JsonObject, signal: AbortSignal, timeout: false | undefined): Promise<Response> {
    const endpoint = this.#endpoints[this.#current % this.#endpoints.length] ?? "";
    try {
      return await fetch(`${endpoint}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(request),
        signal,
        ...(timeout === false ? { timeout: false } : {}),
      });
    } catch (error) {
      // Not connected: the next call tries the next endpoint.
      this.#current += 1;
      throw error;
    }
  }
}

function keyValueOf(kv: JsonObject): KeyValue {
  return { key: decode(stringAt(kv, "key")), value: decode(stringAt(kv, "value")), modRevision: int64At(kv, "mod_revision") };
}

const encoder = new TextEncoder();

/** A watch line, bounded in size by linesOf, and here in shape as every other etcd answer. */
async function parseLine(line: string): Promise<JsonObject> {
  const value: unknown = await parseJsonBounded(
    encoder.encode(line),
    (what, cause) => new EtcdError(`etcd's watch message ${what}`, undefined, { cause }),
  );
  const error = errorOf(value);
  if (error !== undefined) throw new EtcdError(`etcd watch failed: ${error.message}`, error.code);
  if (!isObject(value)) throw new EtcdError("etcd sent a watch message that is not a JSON object");
  return objectAt(value, "result");
}

function watchMessageOf(result: JsonObject): WatchMessage {
  const revision = int64At(objectAt(result, "header"), "revision");
  if (result["canceled"] === true) {
    const compactRevision = int64At(result, "compact_revision");
    if (compactRevision > 0n) return { kind: "compacted", compactRevision };
    return { kind: "canceled", reason: stringAt(result, "cancel_reason") ?? "canceled by etcd" };
  }
  if (result["created"] === true) return { kind: "created", revision };
  const events = listAt(result, "events");
  if (events.length === 0) return { kind: "progress", revision };
  const changes = events.map((event): WatchChange => {
    const { key, value, modRevision } = keyValueOf(objectAt(event, "kv"));
    return { type: event["type"] === "DELETE" ? "delete" : "put", key, value, modRevision };
  });
  return { kind: "changes", changes };
}

async function failureOf(response: Response): Promise<EtcdError> {
  const text = new TextDecoder().decode(await readPrefix(response.body, ERROR_ANSWER_BYTES).catch(() => new Uint8Array()));
  let body: unknown;
  try {
    body = JSON.parse(text);
  } catch {
    body = undefined;
  }
  const error = errorOf(body);
  return new EtcdError(`etcd answered HTTP ${response.status}: ${error?.message ?? text.slice(0, 200)}`, error?.code);
}
