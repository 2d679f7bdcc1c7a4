import { ProxyError, type WorkerAnswer } from "../errors.ts";
import { isJsonObject, parseJson, type JsonValue } from "../json.ts";
import { ANSWER_SHAPE_LIMITS } from "../json-bytes.ts";
import { JsonShapeGuard, type JsonLayout, type JsonShapeProblem } from "../json-shape.ts";
import { concatBytes } from "../sse/bytes.ts";
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
export function answersStarting(response: Response): boolean {
  return response.status === 503 && response.headers.get("x-trtllm-server-state") === "starting";
}

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
  return new ProxyError("WORKER_HTTP_ERROR", answer.status, text, { workerAnswer: answer, starting });
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

/** Reads a body up to `limit` bytes; the rest is cancelled, as it is when `onPiece` throws (which the read then throws). */
export async function readPrefix(body: ReadableStream<Uint8Array> | null, limit: number, onPiece?: (piece: Uint8Array) => void): Promise<Uint8Array> {
  if (!body) return new Uint8Array();
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let size = 0;
  try {
    while (size < limit) {
      const { done, value } = await reader.read();
      if (done) break;
      onPiece?.(value);
      parts.push(value);
      size += value.byteLength;
    }
  } finally {
    reader.cancel().catch(() => {});
  }
  return (concatBytes(parts) ?? new Uint8Array()).subarray(0, Math.min(size, limit));
}

/**
 * Reads a whole answer, refusing one larger than `limit` bytes; `onPiece` sees its bytes in
 * order as they arrive (all at once when read natively) and may refuse them by throwing. An
 * answer that declares its length (and is not compressed, so the length is what arrives) is
 * read natively in one go: the HTTP framing already stops it there, and a JS read loop costs
 * ~12 µs more per call.
 */
export async function readBounded(response: Response, limit: number, onPiece?: (piece: Uint8Array) => void): Promise<Uint8Array> {
  const declared = declaredLength(response.headers);
  if (declared !== undefined) {
    if (declared > limit) {
      response.body?.cancel().catch(() => {});
      throw tooLarge(limit);
    }
    const bytes = await response.bytes();
    onPiece?.(bytes);
    return bytes;
  }
  const bytes = await readPrefix(response.body, limit + 1, onPiece);
  if (bytes.byteLength > limit) throw tooLarge(limit);
  return bytes;
}

function declaredLength(headers: Headers): number | undefined {
  const encoding = headers.get("content-encoding");
  if (encoding !== null && encoding.toLowerCase() !== "identity") return undefined;
  const length = headers.get("content-length");
  if (length === null || !/^\d+$/.test(length)) return undefined;
  return Number(length);
}

function tooLarge(limit: number): ProxyError {
  return new ProxyError("WORKER_BAD_ANSWER", 502, `Worker answer is larger than ${limit} bytes`);
}

/**
 * An answer read by `read`, its shape checked against ANSWER_SHAPE_LIMITS as its bytes arrive
 * and before anything parses them: refused (the failed leg is logged with this cause where it
 * ends) or returned with its layout.
 */
export async function readShaped(limit: number, read: (onPiece: (piece: Uint8Array) => void) => Promise<Uint8Array>): Promise<{ bytes: Uint8Array; layout: JsonLayout }> {
  const guard = new JsonShapeGuard(ANSWER_SHAPE_LIMITS, limit);
  const bytes = await read((piece) => refuseShape(guard.feed(piece)));
  refuseShape(guard.finish(bytes.length));
  return { bytes, layout: guard.layout() };
}

function refuseShape(problem: JsonShapeProblem | undefined): void {
  if (problem === undefined) return;
  const what = problem.bound === "depth" ? `nests deeper than ${problem.limit} levels` : `holds more than ${problem.limit} JSON values for its size`;
  throw new ProxyError("WORKER_BAD_ANSWER", 502, `Worker answer ${what}`);
}

/**
 * One of the proxy's own reads of a worker (/server_info, /v1/models, its load, its perf
 * records): GET `path` within `timeoutMs` (and `signal`, when given). A 2xx answer is returned
 * for the caller to read, bounded; any other is undefined, its body cancelled unread. A
 * failure to connect, or the timeout, throws.
 */
export async function getFromWorker(fetch: WorkerFetch, origin: string, path: string, timeoutMs: number, signal?: AbortSignal): Promise<Response | undefined> {
  const timeout = AbortSignal.timeout(timeoutMs);
  const response = await fetch(`${origin}${path}`, { signal: signal === undefined ? timeout : AbortSignal.any([signal, timeout]) });
  if (response.ok) return response;
  await response.body?.cancel();
  return undefined;
}

/** Fatal: an answer that is not UTF-8 is broken, not text to repair. */
const strictDecoder = new TextDecoder("utf-8", { fatal: true });

/**
 * A worker's JSON answer to a call the proxy makes for itself (/server_info, /version,
 * /kv_cache_events, /perf_metrics, the clock probe), bounded as a model answer is: at most
 * `limit` bytes (a declared larger length is refused before a byte is read), its shape
 * checked as it arrives, parsed only then. Throws a WORKER_BAD_ANSWER ProxyError otherwise.
 */
export async function readJsonAnswer(response: Response, limit: number): Promise<JsonValue> {
  const { bytes } = await readShaped(limit, (onPiece) => readBounded(response, limit, onPiece));
  let text: string;
  try {
    text = strictDecoder.decode(bytes);
  } catch (cause) {
    throw new ProxyError("WORKER_BAD_ANSWER", 502, "Worker answer is not valid UTF-8", { cause });
  }
  try {
    return parseJson(text);
  } catch (cause) {
    throw new ProxyError("WORKER_BAD_ANSWER", 502, "Worker answer is not valid JSON", { cause });
  }
}
