import { ProxyError } from "../errors.ts";
import { concatBytes, streamOf, type ByteReader } from "../bytes.ts";
import { readPrefixOf } from "../json/bounded-read.ts";
import type { Role } from "../config/types.ts";
import type { Deadlines } from "../deadline-wheel.ts";
import { isPartsBody, type PartsBody, type WorkerBody } from "./body-codec.ts";
import { readShaped, withoutWorkerAddress } from "./answers.ts";
import type { WorkerFetch } from "./transport.ts";
import type { RawInit } from "./http1/connection.ts";

/**
 * What every call to a worker shares, whichever way its answer is read (client.ts: whole;
 * stream-call.ts: a stream): the call itself, the request fetch is given, the deadline of a
 * call made through fetch, an error answer's prefix, and the mapping of what failed onto the
 * domain error.
 */

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

/** A timeout that can be cleared, unlike AbortSignal.timeout: on the shared wheel when there is one. */
export class Deadline {
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

export async function send(post: WorkerPost, deadline: Deadline): Promise<Response> {
  try {
    const { url, init } = requestOf(post, AbortSignal.any([post.signal, deadline.signal]));
    return await post.fetch(url, init);
  } catch (error) {
    throw translateFailure(error, post, "before the answer");
  }
}

/**
 * The call's URL and fetch options: its headers, its body, its signals. A body in parts goes to
 * the proxy's own client as its parts (`rawParts`: written in order, never joined); to fetch,
 * joined when small, else streamed with its length declared.
 */
export function requestOf(post: WorkerPost, signal: AbortSignal, rawParts: true): { url: string; init: RawInit };
export function requestOf(post: WorkerPost, signal: AbortSignal): { url: string; init: BunFetchRequestInit };
export function requestOf(post: WorkerPost, signal: AbortSignal, rawParts = false): { url: string; init: RawInit } {
  const get = post.method === "GET";
  const headers: Record<string, string> = get
    ? { ...post.headers, accept: "application/json" }
    : { ...post.headers, "content-type": "application/json", accept: "application/json, text/event-stream" };
  let body: RawInit["body"];
  if (get) body = undefined;
  else if (!isPartsBody(post.body)) body = post.body;
  else if (rawParts) body = post.body.parts;
  else if (post.body.byteLength < STREAMED_PARTS_BYTES) body = concatBytes(post.body.parts) ?? new Uint8Array();
  else {
    // A large body in parts is streamed with its length declared, so it goes out with a
    // Content-Length as any other body, and is never joined: fetch copies a buffer body whole.
    headers["content-length"] = String(post.body.byteLength);
    body = partsStream(post.body);
  }
  const init: RawInit = {
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

/** fetch is given a body in parts as a stream from this size on; smaller, as one buffer (a stream costs more than the copy). */
const STREAMED_PARTS_BYTES = 256 * 1024;

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

export function errorAnswer(
  response: Response,
  limit: number,
  origin: string,
): Promise<{ status: number; contentType: string; body: Uint8Array }> {
  const body = response.body ?? streamOf([]);
  return errorAnswerOf({ status: response.status, headers: response.headers, reader: body.getReader() }, limit, origin);
}

export async function errorAnswerOf(
  answer: { readonly status: number; readonly headers: Headers; readonly reader: ByteReader },
  limit: number,
  origin: string,
): Promise<{ status: number; contentType: string; body: Uint8Array }> {
  const contentType = answer.headers.get("content-type") ?? "application/json";
  // An error body is parsed too (for its message): its shape is bounded as a success's is.
  const { bytes: body } = await readShaped(limit, (onPiece) => readPrefixOf(answer.reader, limit, onPiece));
  return { status: answer.status, contentType, body: withoutWorkerAddress(body, origin) };
}

export function isEventStream(headers: Headers): boolean {
  return (headers.get("content-type") ?? "").includes("text/event-stream");
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
