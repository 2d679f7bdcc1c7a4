import { ProxyError } from "../errors.ts";
import { isJsonObject, parseJson, type JsonObject } from "../json/json.ts";
import { parseKeepingList, type KeptList } from "../json/json-bytes.ts";
import type { JsonLayout } from "../json/json-shape.ts";
import { isPartsBody, type PartsBody, type WorkerBody } from "./body-codec.ts";
import type { WorkerFetch } from "./transport.ts";
import type { WholeAnswer } from "./http1/whole-exchange.ts";
import { streamOf, type ByteReader } from "../bytes.ts";
import { readPrefixOf } from "../json/bounded-read.ts";
import { answersStarting, readBounded, readShaped, STREAM_ERROR_PREFIX_BYTES, withoutWorkerAddress, workerHttpError } from "./answers.ts";
import type { Role } from "../config/types.ts";
import type { Deadlines } from "../deadline-wheel.ts";

export interface WorkerPost {
  readonly role: Role;
  /** Default POST; a GET sends no body. */
  readonly method?: "GET" | "POST";
  readonly origin: string;
  readonly path: string;
  /** JSON text, or msgpack bytes (their X-TRTLLM-Msgpack header comes in `headers`). */
  readonly body: WorkerBody;
  /** Aborts the call: the request's end, or the paired leg's failure. */
  readonly signal: AbortSignal;
  /** Non-streamed: bound on the whole call. Streamed: bound on the wait for headers. */
  readonly timeoutMs: number;
  readonly fetch: WorkerFetch;
  /** Per-attempt headers (trace context, internal HMAC, metrics request, body encoding). */
  readonly headers: Readonly<Record<string, string>>;
  /** A non-streamed answer larger than this is refused (context answers carry token ids). */
  readonly maxAnswerBytes: number;
  /**
   * Called once the worker's answer began (its status line and headers arrived). For a
   * non-streamed context request that means the worker finished the phase: its KV is committed.
   */
  readonly onAnswer?: (() => void) | undefined;
  /** On a connection of its own, never a pooled one (the retry of a request a reused connection lost). */
  readonly fresh?: boolean | undefined;
  /** Where `timeoutMs` is kept: the process's shared wheel; absent, a timer of the call's own. */
  readonly deadlines?: Deadlines | undefined;
}

export interface JsonAnswer {
  readonly body: JsonObject;
  readonly headers: Headers;
  /** The answer's bytes as the worker sent them (valid UTF-8 and a JSON object: checked). */
  readonly bytes: Uint8Array;
  /**
   * A context answer's `prompt_token_ids` kept as their bytes (`body` reads null there) when
   * they are a long list of integers: the proxy only passes them on (see parseKeepingList).
   */
  readonly keptTokenIds?: KeptList | undefined;
}

/**
 * Context answers whose token ids take at least this many bytes keep them unparsed. Measured
 * (bench/micro/agent-phases.ts), a 10 KB prompt's 2,591 ids: parsed and written again, 101 +
 * 215 µs for the answer and the generation body; kept, 20 + 6 µs. At 287 ids, 8.6 + 5.9 µs
 * against 5.8 + 3.2: only a list too short to matter is worth parsing.
 */
const KEEP_TOKEN_IDS_BYTES = 1024;

/** Fatal: a worker answer that is not UTF-8 is a broken answer, not text to repair. */
const decoder = new TextDecoder("utf-8", { fatal: true });

function decodeAnswer(bytes: Uint8Array): string {
  try {
    return decoder.decode(bytes);
  } catch (cause) {
    throw new ProxyError("WORKER_BAD_ANSWER", 502, "Worker answer is not valid UTF-8", { cause });
  }
}

/** POSTs a non-streamed request and returns the worker's JSON answer, or throws a ProxyError. */
export function postForJson(post: WorkerPost): Promise<JsonAnswer> {
  return wholeAnswerOf(post) ?? viaResponse(post);
}

/**
 * The answer read whole by the transport itself, its pieces shape-checked as they arrive, with
 * no Response (http1/whole-exchange.ts), its deadline kept by the exchange with no signal of its own;
 * undefined where the transport reads it only as a Response.
 */
function wholeAnswerOf(post: WorkerPost): Promise<JsonAnswer> | undefined {
  const { url, init } = requestOf(post, post.signal);
  const limit = post.maxAnswerBytes;
  const state: { headed: boolean; guard: (piece: Uint8Array) => void } = { headed: false, guard: ignorePiece };
  const pending = post.fetch.whole?.(url, init, {
    limit,
    tooLarge: () => new ProxyError("WORKER_BAD_ANSWER", 502, `Worker answer is larger than ${limit} bytes`),
    timeout: { ms: post.timeoutMs, deadlines: post.deadlines },
    onHead: (status, headers) => {
      state.headed = true;
      post.onAnswer?.();
      // Refused at its head, as the Response path refuses it: read whole, a stream would last until the call's timeout.
      if (status < 400 && isEventStream(headers)) throw notJson();
    },
    // Set by readShaped before any piece can arrive: pieces come from socket events, never in this turn.
    onPiece: (piece) => state.guard(piece),
  });
  return pending === undefined ? undefined : wholeRead(post, pending, state);
}

async function wholeRead(
  post: WorkerPost,
  pending: Promise<WholeAnswer>,
  state: { headed: boolean; guard: (piece: Uint8Array) => void },
): Promise<JsonAnswer> {
  try {
    let answer: WholeAnswer | undefined;
    const { bytes, layout } = await readShaped(post.maxAnswerBytes, (onPiece) => {
      state.guard = onPiece;
      return pending.then((whole) => {
        answer = whole;
        return whole.bytes;
      });
    });
    const { status, headers } = answer ?? { status: 502, headers: new Headers() };
    if (status >= 400) {
      const contentType = headers.get("content-type") ?? "application/json";
      throw workerHttpError(
        post.role,
        { status, contentType, body: withoutWorkerAddress(bytes, post.origin) },
        answersStarting({ status, headers }),
      );
    }
    return answerOf(post, { headers }, bytes, layout);
  } catch (error) {
    throw translateFailure(error, post, state.headed ? undefined : "before the answer");
  }
}

/** The answer read from a Response (fetch's, for https: workers). */
async function viaResponse(post: WorkerPost): Promise<JsonAnswer> {
  const deadline = new Deadline(post.timeoutMs, post.deadlines);
  try {
    const response = await send(post, deadline);
    post.onAnswer?.();
    return await responseAnswer(post, response);
  } finally {
    deadline.clear();
  }
}

async function responseAnswer(post: WorkerPost, response: Response): Promise<JsonAnswer> {
  try {
    if (response.status >= 400)
      throw workerHttpError(post.role, await errorAnswer(response, post.maxAnswerBytes, post.origin), answersStarting(response));
    if (isEventStream(response.headers)) throw notJson();
    const { bytes, layout } = await readShaped(post.maxAnswerBytes, (onPiece) => readBounded(response, post.maxAnswerBytes, onPiece));
    return answerOf(post, response, bytes, layout);
  } catch (error) {
    throw translateFailure(error, post);
  }
}

/** A success's bytes, shape-checked, as the JSON answer: its long token-id list kept as bytes on a context answer. */
function answerOf(post: WorkerPost, head: { readonly headers: Headers }, bytes: Uint8Array, layout: JsonLayout): JsonAnswer {
  if (isEventStream(head.headers)) throw notJson();
  if (post.role === "context" && bytes.length >= KEEP_TOKEN_IDS_BYTES) {
    return { ...parseKeepingTokenIds(bytes, layout), headers: head.headers, bytes };
  }
  return { body: parseAnswer(decodeAnswer(bytes)), headers: head.headers, bytes };
}

function ignorePiece(): void {}

function notJson(): ProxyError {
  return new ProxyError("WORKER_BAD_ANSWER", 502, "Received an event stream although the request was not streamed");
}

/** A worker's answer as it came (any status), its body read within the bound. */
export interface RawAnswer {
  readonly status: number;
  readonly contentType: string;
  readonly body: Uint8Array;
}

/** Calls a worker's non-model route (/v1/models, count_tokens); the caller judges the status. */
export async function fetchAnswer(post: WorkerPost): Promise<RawAnswer> {
  const deadline = new Deadline(post.timeoutMs, post.deadlines);
  try {
    const response = await send(post, deadline);
    const body = await readBounded(response, post.maxAnswerBytes);
    return { status: response.status, contentType: response.headers.get("content-type") ?? "application/json", body };
  } catch (error) {
    throw translateFailure(error, post);
  } finally {
    deadline.clear();
  }
}

/** A worker's event stream at its head: its headers, and the reader of its body. */
export interface WorkerStream {
  readonly headers: Headers;
  readonly reader: ByteReader;
}

/** Whether a call's result is a worker's event stream (a watched call's value: a stream, or a JSON answer). */
export function isWorkerStream(value: unknown): value is WorkerStream {
  return typeof value === "object" && value !== null && "reader" in value && "headers" in value;
}

/** POSTs a streamed request and returns the worker's event stream once its headers arrived. */
export async function postForStream(post: WorkerPost): Promise<WorkerStream> {
  const answer = await streamHead(post);
  if (answer.status >= 400 || !isEventStream(answer.headers)) {
    const error = await errorAnswerOf(answer, STREAM_ERROR_PREFIX_BYTES, post.origin).catch((thrown: unknown) => {
      throw translateFailure(thrown, post);
    });
    if (answer.status >= 400) throw workerHttpError(post.role, error, answersStarting(answer));
    throw new ProxyError("WORKER_BAD_ANSWER", 502, `The ${post.role} worker did not answer with an event stream`, {
      workerAnswer: { ...error, status: 502 },
    });
  }
  return answer;
}

/**
 * The stream's head: read straight from the socket where the transport can (its deadline kept
 * by the exchange, no signal of its own), else from fetch's Response. Only the wait for the head
 * is bounded here: the relay bounds silence, never length.
 */
async function streamHead(post: WorkerPost): Promise<{ status: number; headers: Headers; reader: ByteReader }> {
  const { url, init } = requestOf(post, post.signal);
  const pending = post.fetch.stream?.(url, init, { ms: post.timeoutMs, deadlines: post.deadlines });
  if (pending !== undefined) return pending.catch((error: unknown) => Promise.reject(translateFailure(error, post, "before the answer")));
  const deadline = new Deadline(post.timeoutMs, post.deadlines);
  const response = await send(post, deadline).finally(() => deadline.clear());
  const body = response.body ?? streamOf([]);
  return { status: response.status, headers: response.headers, reader: body.getReader() };
}

/** A timeout that can be cleared, unlike AbortSignal.timeout: on the shared wheel when there is one. */
class Deadline {
  readonly #controller = new AbortController();
  readonly #clear: () => void;

  constructor(ms: number, deadlines: Deadlines | undefined) {
    const fire = (): void => this.#controller.abort(new DOMException("Timed out", "TimeoutError"));
    if (deadlines !== undefined) this.#clear = deadlines.schedule(ms, fire);
    else {
      const timer = setTimeout(fire, ms);
      this.#clear = () => clearTimeout(timer);
    }
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  clear(): void {
    this.#clear();
  }
}

async function send(post: WorkerPost, deadline: Deadline): Promise<Response> {
  try {
    const { url, init } = requestOf(post, AbortSignal.any([post.signal, deadline.signal]));
    return await post.fetch(url, init);
  } catch (error) {
    throw translateFailure(error, post, "before the answer");
  }
}

/** The call's URL and fetch options: its headers, its body (a body in parts streamed with its length), its signals. */
function requestOf(post: WorkerPost, signal: AbortSignal): { url: string; init: BunFetchRequestInit } {
  const get = post.method === "GET";
  const headers: Record<string, string> = get
    ? { ...post.headers, accept: "application/json" }
    : { ...post.headers, "content-type": "application/json", accept: "application/json, text/event-stream" };
  let body: string | Uint8Array | ReadableStream<Uint8Array> | undefined;
  if (get) body = undefined;
  else if (isPartsBody(post.body)) {
    // A body in parts is streamed with its length declared, so it goes out with a
    // Content-Length as any other body, and is never joined: fetch copies a buffer body whole.
    headers["content-length"] = String(post.body.byteLength);
    body = partsStream(post.body);
  } else body = post.body;
  const init: BunFetchRequestInit = {
    method: get ? "GET" : "POST",
    headers,
    ...(body === undefined ? {} : { body }),
    signal,
    // Bun's own 5-minute socket idle timer would cut a long silent prefill; our deadlines
    // (total for non-streamed calls, silence for streams) bound every call instead.
    timeout: false,
    ...(post.fresh === true ? { keepalive: false } : {}),
  };
  return { url: post.origin + post.path, init };
}

/** Larger parts are handed to the socket in views of this size. */
const STREAM_CHUNK_BYTES = 256 * 1024;

/**
 * The parts a view at a time, each when the socket wants more: a part handed over whole would
 * be copied into the socket's buffer while it waits (measured: ~0.65× the body; views: ~0).
 */
function partsStream(body: PartsBody): ReadableStream<Uint8Array> {
  let next = 0;
  let offset = 0;
  return new ReadableStream<Uint8Array>({
    pull(controller) {
      const part = body.parts[next];
      if (part === undefined) {
        controller.close();
        return;
      }
      controller.enqueue(part.subarray(offset, offset + STREAM_CHUNK_BYTES));
      offset += STREAM_CHUNK_BYTES;
      if (offset >= part.length) {
        next++;
        offset = 0;
      }
    },
  });
}

function errorAnswer(
  response: Response,
  limit: number,
  origin: string,
): Promise<{ status: number; contentType: string; body: Uint8Array }> {
  const body = response.body ?? streamOf([]);
  return errorAnswerOf({ status: response.status, headers: response.headers, reader: body.getReader() }, limit, origin);
}

async function errorAnswerOf(
  answer: { readonly status: number; readonly headers: Headers; readonly reader: ByteReader },
  limit: number,
  origin: string,
): Promise<{ status: number; contentType: string; body: Uint8Array }> {
  const contentType = answer.headers.get("content-type") ?? "application/json";
  // An error body is parsed too (for its message): its shape is bounded as a success's is.
  const { bytes: body } = await readShaped(limit, (onPiece) => readPrefixOf(answer.reader, limit, onPiece));
  return { status: answer.status, contentType, body: withoutWorkerAddress(body, origin) };
}

function isEventStream(headers: Headers): boolean {
  return (headers.get("content-type") ?? "").includes("text/event-stream");
}

function parseKeepingTokenIds(bytes: Uint8Array, layout: JsonLayout): { body: JsonObject; keptTokenIds: KeptList | undefined } {
  let parsed: ReturnType<typeof parseKeepingList>;
  try {
    parsed = parseKeepingList(bytes, layout, "prompt_token_ids", KEEP_TOKEN_IDS_BYTES);
  } catch (cause) {
    const utf8 = cause instanceof TypeError;
    throw new ProxyError("WORKER_BAD_ANSWER", 502, utf8 ? "Worker answer is not valid UTF-8" : "Worker answer is not valid JSON", {
      cause,
    });
  }
  if (!isJsonObject(parsed.body)) throw new ProxyError("WORKER_BAD_ANSWER", 502, "Worker answer is not a JSON object");
  return { body: parsed.body, keptTokenIds: parsed.kept };
}

function parseAnswer(text: string): JsonObject {
  let body: unknown;
  try {
    body = parseJson(text);
  } catch (cause) {
    throw new ProxyError("WORKER_BAD_ANSWER", 502, "Worker answer is not valid JSON", { cause });
  }
  if (!isJsonObject(body)) throw new ProxyError("WORKER_BAD_ANSWER", 502, "Worker answer is not a JSON object");
  return body;
}

/** What a connection closed under a request looks like to fetch: a reset, or a close it did not expect. */
const CONNECTION_LOST = new Set(["ECONNRESET", "ConnectionClosed", "EPIPE", "ECONNABORTED"]);

/**
 * Maps what fetch threw onto the domain error. The request's own abort reason wins, so a
 * client that left stays "client gone", never "worker unreachable".
 *
 * A connection lost `before the answer` (no status line yet) on a pooled connection is the
 * keep-alive race (pipeline/retry.ts): `unread`. fetch does not say whether the connection was
 * a pooled one or new, nor whether the request's body was fully written, so every such loss is
 * reported so, including a reset by a middlebox after it forwarded the whole request (retry.ts
 * says what that costs); a transport that knows reports it for reused connections only, and
 * could for losses before the body was written only (notes: /work/notes/faults-to-perf.md).
 */
export function translateFailure(
  error: unknown,
  post: Pick<WorkerPost, "role" | "signal" | "fresh">,
  when?: "before the answer",
): ProxyError {
  if (post.signal.aborted && post.signal.reason instanceof ProxyError) return post.signal.reason;
  if (error instanceof ProxyError) return error;
  const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined;
  const name = error instanceof Error || error instanceof DOMException ? error.name : undefined;
  if (name === "TimeoutError") {
    return new ProxyError("WORKER_TIMEOUT", 504, `The ${post.role} worker did not answer in time`, { cause: error });
  }
  if (code === "ECONNREFUSED" || code === "ConnectionRefused") {
    return new ProxyError("WORKER_UNREACHABLE", 502, `The ${post.role} worker is unreachable`, { cause: error, neverSent: true });
  }
  const unread = when === "before the answer" && post.fresh !== true && typeof code === "string" && CONNECTION_LOST.has(code);
  return new ProxyError("WORKER_UNREACHABLE", 502, `The connection to the ${post.role} worker failed`, { cause: error, unread });
}
