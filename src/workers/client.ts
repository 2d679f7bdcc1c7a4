import { ProxyError } from "../errors.ts";
import { isJsonObject, parseJson, type JsonObject } from "../json/json.ts";
import { parseKeepingList, type KeptList } from "../json/json-bytes.ts";
import type { JsonLayout } from "../json/json-shape.ts";
import type { WholeAnswer } from "./http1/whole-exchange.ts";
import { answersStarting, readBounded, readShaped, withoutWorkerAddress, workerHttpError } from "./answers.ts";
import { Deadline, errorAnswer, isEventStream, requestOf, send, translateFailure, type WorkerPost } from "./worker-call.ts";

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
  const { url, init } = requestOf(post, post.signal, true);
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
