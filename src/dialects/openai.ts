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

/**
 * Chat and completions: the worker's bytes go out untouched; the relay only watches frames
 * to know the stream's end ([DONE]), a worker's in-band error, and where a keepalive may go.
 */
export function openAiStream(maxEventBytes?: number): DialectStream {
  const scanner = new SseFrameScanner(maxEventBytes === undefined ? {} : { maxFrameBytes: maxEventBytes });
  let done = false;
  let workerError: string | undefined;
  // Frames are matched on their bytes, with no object per frame: decoding every token's
  // frame cost more CPU than the rest of the relay (measured on the streaming benchmark).
  const watch: FrameSink = (bytes, start, end, _isComment, _lent, hasCr) => {
    const head = dataHeadIn(bytes, start, end, hasCr);
    if (head === undefined) return;
    if (isExactly(head, DONE)) done = true;
    else if (headStartsWith(head, ERROR_PREFIX)) workerError ??= inBandErrorMessage(dataOf(bytes, start, end));
  };
  return {
    opening: () => undefined,
    push(chunk) {
      scanner.scan(chunk, watch);
      return chunk;
    },
    keepalive: () => (scanner.midFrame ? undefined : KEEPALIVE),
    end: () =>
      done || workerError !== undefined
        ? undefined
        : new ProxyError("WORKER_STREAM_BROKEN", 502, "Upstream stream ended before [DONE]; the response is incomplete"),
    fail(error) {
      const frame = encodeData(JSON.stringify({ error: openAiErrorObject(error) }));
      return scanner.midFrame ? concatBytes([FRAME_END, frame]) : frame;
    },
    get workerError() {
      return workerError;
    },
    get delivered() {
      return done || workerError !== undefined;
    },
  };
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
