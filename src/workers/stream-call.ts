import { ProxyError } from "../errors.ts";
import { streamOf, type ByteReader } from "../bytes.ts";
import { answersStarting, STREAM_ERROR_PREFIX_BYTES, workerHttpError } from "./answers.ts";
import { Deadline, errorAnswerOf, isEventStream, requestOf, send, translateFailure, type WorkerPost } from "./worker-call.ts";

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
  const { url, init } = requestOf(post, post.signal, true);
  const pending = post.fetch.stream?.(url, init, { ms: post.timeoutMs, deadlines: post.deadlines });
  if (pending !== undefined) return pending.catch((error: unknown) => Promise.reject(translateFailure(error, post, "before the answer")));
  const deadline = new Deadline(post.timeoutMs, post.deadlines);
  const response = await send(post, deadline).finally(() => deadline.clear());
  const body = response.body ?? streamOf([]);
  return { status: response.status, headers: response.headers, reader: body.getReader() };
}
