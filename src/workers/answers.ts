import { ProxyError, type WorkerAnswer } from "../errors.ts";
import { readBounded as readBoundedAnswer, readJsonBounded, readShaped as readShapedAnswer } from "../json/bounded-read.ts";
import { isJsonObject, parseJson, type JsonValue } from "../json/json.ts";
import type { JsonLayout } from "../json/json-shape.ts";
import { contextOverflowOf } from "./context-overflow.ts";
import type { WorkerFetch } from "./transport.ts";

/**
 * A worker's /server_info, /version or clock probe answer is a few hundred bytes; one larger
 * than this is refused unread (a 32 MiB /server_info once took the proxy to 2.3–5 GB RSS).
 */
export const INFO_ANSWER_BYTES = 1024 * 1024;

/** Streamed requests carry at most this much of a worker's error body. */
export const STREAM_ERROR_PREFIX_BYTES = 2048;

const decoder = new TextDecoder();

/** A worker's error body, parsed for what it says: its message and its `code`. */
interface ErrorStatement {
  readonly message: string | undefined;
  readonly code: unknown;
}

function statementOf(answer: WorkerAnswer): ErrorStatement {
  let body: unknown;
  try {
    body = parseJson(decoder.decode(answer.body));
  } catch {
    return { message: undefined, code: undefined };
  }
  if (!isJsonObject(body)) return { message: undefined, code: undefined };
  const error = body["error"];
  const code = isJsonObject(error) && error["code"] !== undefined ? error["code"] : body["code"];
  if (isJsonObject(error) && typeof error["message"] === "string") return { message: error["message"], code };
  if (typeof error === "string") return { message: error, code };
  if (typeof body["message"] === "string") return { message: body["message"], code };
  return { message: typeof body["detail"] === "string" ? body["detail"] : undefined, code };
}

/**
 * The answer of a worker still loading its model: upstream's readiness gate answers every route
 * 503 with `x-trtllm-server-state: starting` before the route runs (tensorrt_llm/serve/
 * readiness.py @ e6c89c08db8fc8e39c32a9589c732157df5d9dcd). The header alone says it, by
 * upstream's design: the body need not be read.
 */
export function answersStarting(response: { readonly status: number; readonly headers: Headers }): boolean {
  return response.status === 503 && response.headers.get("x-trtllm-server-state") === "starting";
}

/**
 * What a draining worker says to a new request, whatever the status its frontend gives it:
 * RequestTracker's RuntimeError (tensorrt_llm/serve/request_tracker.py @ 6953e49d, admit and
 * begin_external). Such a worker did nothing with the request, as a starting one.
 */
const DRAINING_STATEMENT = "TensorRT-LLM is draining";

/**
 * A worker's error answer as the domain error: a 400 refusing the prompt as too long for the
 * context is CONTEXT_OVERFLOW, with the counts the worker gave, so each dialect can say it in
 * its client's words; anything else is WORKER_HTTP_ERROR. Both keep the answer to relay.
 */
export function workerHttpError(role: string, answer: WorkerAnswer, starting = false): ProxyError {
  const { message, code } = statementOf(answer);
  // The worker's own text (never the raw body, which may name hosts).
  const text = message ?? `The ${role} worker rejected the request with status ${answer.status}`;
  const overflow = answer.status === 400 ? contextOverflowOf(message ?? "", code) : undefined;
  if (overflow !== undefined) return new ProxyError("CONTEXT_OVERFLOW", 400, text, { workerAnswer: answer, overflow });
  const draining = message?.includes(DRAINING_STATEMENT) === true;
  return new ProxyError("WORKER_HTTP_ERROR", answer.status, text, { workerAnswer: answer, starting, draining });
}

const encoder = new TextEncoder();

/**
 * A worker's error body, safe to relay: every mention of the worker's own address (origin,
 * host:port, or a dotted host) is replaced, so a client never learns where workers live.
 */
export function withoutWorkerAddress(body: Uint8Array, origin: string): Uint8Array {
  const url = new URL(origin);
  const names = [origin, url.host, url.hostname.includes(".") || url.hostname.includes(":") ? url.hostname : ""];
  const text = decoder.decode(body);
  let scrubbed = text;
  for (const name of names) if (name) scrubbed = scrubbed.replaceAll(name, "worker");
  return scrubbed === text ? body : encoder.encode(scrubbed);
}

/** A worker's answer refused by a bounded read: a 502 WORKER_BAD_ANSWER (the failed leg is logged with it where it ends). */
function refuseWorkerAnswer(what: string, cause?: unknown): ProxyError {
  return new ProxyError("WORKER_BAD_ANSWER", 502, `Worker answer ${what}`, cause === undefined ? {} : { cause });
}

export { readPrefix } from "../json/bounded-read.ts";

/** json/bounded-read.ts's readBounded, refusing as a worker's answer. */
export function readBounded(response: Response, limit: number, onPiece?: (piece: Uint8Array) => void): Promise<Uint8Array> {
  return readBoundedAnswer(response, limit, refuseWorkerAnswer, onPiece);
}

/** json/bounded-read.ts's readShaped (within ANSWER_SHAPE_LIMITS), refusing as a worker's answer. */
export function readShaped(
  limit: number,
  read: (onPiece: (piece: Uint8Array) => void) => Promise<Uint8Array>,
): Promise<{ bytes: Uint8Array; layout: JsonLayout }> {
  return readShapedAnswer(limit, refuseWorkerAnswer, read);
}

/**
 * One of the proxy's own reads of a worker (/server_info, /v1/models, its load, its perf
 * records): GET `path` within `timeoutMs` (and `signal`, when given). A 2xx answer is returned
 * for the caller to read, bounded; any other is undefined, its body cancelled unread. A
 * failure to connect, or the timeout, throws.
 */
export async function getFromWorker(
  fetch: WorkerFetch,
  origin: string,
  path: string,
  timeoutMs: number,
  signal?: AbortSignal,
): Promise<Response | undefined> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const response = await fetch(`${origin}${path}`, { signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]) });
  if (response.ok) return response;
  await response.body?.cancel();
  return undefined;
}

/**
 * A worker's JSON answer to a call the proxy makes for itself (/server_info, /version,
 * /kv_cache_events, /perf_metrics, the clock probe), bounded as a model answer is
 * (json/bounded-read.ts's readJsonBounded). Throws a WORKER_BAD_ANSWER ProxyError otherwise.
 */
export function readJsonAnswer(response: Response, limit: number): Promise<JsonValue> {
  return readJsonBounded(response, limit, refuseWorkerAnswer);
}
