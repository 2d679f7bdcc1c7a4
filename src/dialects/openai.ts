import { ProxyError } from "../errors.ts";
import { isJsonObject, parseJsonOrUndefined } from "../json/json.ts";
import { concatBytes } from "../bytes.ts";
import { encodeComment, encodeData } from "../sse/encode.ts";
import { dataHeadIn, headStartsWith, isExactly, ScannedFrame } from "../sse/frame.ts";
import { type FrameSink, SseFrameScanner } from "../sse/frame-scanner.ts";
import type { DialectStream } from "../streaming/dialect.ts";
import { CONTEXT_LENGTH_EXCEEDED } from "../workers/context-overflow.ts";

const KEEPALIVE = encodeComment("keepalive");
const FRAME_END = new TextEncoder().encode("\n\n");
const DONE = new TextEncoder().encode("[DONE]");
const ERROR_PREFIX = new TextEncoder().encode('{"error"');
const DATA_FIELD = new TextEncoder().encode("data: ");
const LF = 0x0a;
const CR = 0x0d;
const OPEN_BRACKET = 0x5b;

/**
 * Chat and completions: the worker's bytes go out untouched; the relay only watches frames
 * to know the stream's end ([DONE]), a worker's in-band error, and where a keepalive may go.
 */
export function openAiStream(maxEventBytes?: number): DialectStream {
  return new OpenAiStream(maxEventBytes);
}

/** One object per stream, its own frame sink: it lives as long as the stream, with no closure. */
class OpenAiStream implements DialectStream, FrameSink {
  readonly #scanner: SseFrameScanner;
  #done = false;
  #workerError: string | undefined;

  constructor(maxEventBytes: number | undefined) {
    this.#scanner = new SseFrameScanner(maxEventBytes === undefined ? {} : { maxFrameBytes: maxEventBytes });
  }

  get workerError(): string | undefined {
    return this.#workerError;
  }

  get delivered(): boolean {
    return this.#done || this.#workerError !== undefined;
  }

  opening(): undefined {
    return undefined;
  }

  push(chunk: Uint8Array): Uint8Array {
    if (!this.#scanner.idle || !plainDataFrames(chunk)) this.#scanner.scan(chunk, this);
    return chunk;
  }

  /**
   * Frames are matched on their bytes, with no object per frame: decoding every token's frame
   * cost more CPU than the rest of the relay (measured on the streaming benchmark).
   */
  frame(bytes: Uint8Array, start: number, end: number, _isComment: boolean, _lent: boolean, hasCr: boolean): void {
    const head = dataHeadIn(bytes, start, end, hasCr);
    if (head === undefined) return;
    if (isExactly(head, DONE)) this.#done = true;
    else if (headStartsWith(head, ERROR_PREFIX)) this.#workerError ??= inBandErrorMessage(dataOf(bytes, start, end));
  }

  keepalive(): Uint8Array | undefined {
    return this.#scanner.midFrame ? undefined : KEEPALIVE;
  }

  end(): ProxyError | undefined {
    if (this.delivered) return undefined;
    return new ProxyError("WORKER_STREAM_BROKEN", 502, "Upstream stream ended before [DONE]; the response is incomplete");
  }

  fail(error: ProxyError): Uint8Array {
    const frame = encodeData(JSON.stringify({ error: openAiErrorObject(error) }));
    return this.#scanner.midFrame ? concatBytes([FRAME_END, frame]) : frame;
  }
}

/**
 * The chunk is whole one-line `data: …` frames and nothing else, none of whose data starts
 * with `[` or `{"error"`: nothing in it for the dialect, and no frame left unfinished. Token
 * frames come so, and are judged with one search per frame instead of the scanner's per-line
 * bookkeeping; any other chunk is scanned.
 */
function plainDataFrames(chunk: Uint8Array): boolean {
  const length = chunk.length;
  if (length === 0 || chunk[length - 1] !== LF || chunk.indexOf(CR) !== -1) return false;
  for (let at = 0; at < length;) {
    if (!bytesAt(chunk, at, DATA_FIELD)) return false;
    const value = at + DATA_FIELD.length;
    if (chunk[value] === OPEN_BRACKET || bytesAt(chunk, value, ERROR_PREFIX)) return false;
    // Found: the chunk ends in LF.
    const lineEnd = chunk.indexOf(LF, value);
    if (chunk[lineEnd + 1] !== LF) return false;
    at = lineEnd + 2;
  }
  return true;
}

function bytesAt(bytes: Uint8Array, at: number, expected: Uint8Array): boolean {
  for (let i = 0; i < expected.length; i++) if (bytes[at + i] !== expected[i]) return false;
  return true;
}

/**
 * The `error` member of OpenAI's envelope for a failure after the stream opened; a prompt too
 * long for the context keeps the code the worker (and OpenAI) gives it.
 */
function openAiErrorObject(error: ProxyError): { message: string; type: string; param: null; code: number | string } {
  const code = error.code === "CONTEXT_OVERFLOW" ? CONTEXT_LENGTH_EXCEEDED : error.status;
  return { message: error.message, type: errorType(error.status), param: null, code };
}

export function errorType(status: number): string {
  if (status === 400) return "BadRequestError";
  if (status === 401) return "AuthenticationError";
  if (status === 404) return "NotFoundError";
  if (status === 405) return "MethodNotAllowed";
  if (status === 408) return "RequestTimeout";
  if (status === 413) return "RequestTooLarge";
  if (status === 499) return "ClientClosedRequest";
  if (status === 501) return "NotImplementedError";
  if (status === 503) return "ServiceUnavailableError";
  if (status === 504) return "GatewayTimeout";
  return status < 500 ? "BadRequestError" : "InternalServerError";
}

/** The decoded data of a frame (its bytes are only lent to the caller). */
function dataOf(bytes: Uint8Array, start: number, end: number): string {
  return new ScannedFrame(bytes.slice(start, end), 0, end - start, false).data ?? "";
}

function inBandErrorMessage(data: string): string {
  // A malformed error frame is still an error frame.
  const parsed = parseJsonOrUndefined(data);
  const error = isJsonObject(parsed) ? parsed["error"] : undefined;
  if (isJsonObject(error) && typeof error["message"] === "string") return error["message"];
  return "The generation worker reported an error in its stream";
}
