/**
 * The watch on a context-first hand-off's legs: whether an attempt may have reached a worker
 * (so may have claimed the hand-off), and what becomes of an attempt still in flight when its
 * request ends. The settler (./handoff-settler.ts) decides; the leg runner only reports.
 */
import type { WorkerPost } from "../../workers/client.ts";

/** An attempt in flight when its request ended. */
export interface AdoptedAttempt {
  readonly origin: string;
  /** The disagg_request_id it was sent under. */
  readonly id: bigint;
  /** The worker's answer has begun (headers in); read live. */
  readonly answering: boolean;
}

/** What a hand-off's generation leg tells its settler (pipeline/handoff/settler.ts). */
export interface HandoffWatch {
  /** An attempt may have reached a worker (sent, and not failed provably unread): the hand-off may be claimed. */
  reached: boolean;
  /** The request ended while the attempt sent to `origin` under `id` was in flight: the watch decides when `abort` stops it. */
  adopt(pending: Promise<unknown>, abort: (reason: unknown) => void, attempt: AdoptedAttempt): void;
}

/**
 * An attempt of a hand-off's generation leg, on an abort of its own: the request's end hands an
 * attempt still in flight to the watch (which stops it once it claimed the hand-off) and fails
 * the attempt for the request at once. A stream that answered follows the request's end again.
 */
export async function watchedCall<T>(
  call: (post: WorkerPost) => Promise<T>,
  post: WorkerPost,
  request: AbortSignal,
  watch: HandoffWatch,
  id: bigint,
): Promise<T> {
  const own = new AbortController();
  let answering = false;
  const pending = call({ ...post, signal: own.signal, onAnswer: () => (answering = true) });
  watch.reached = true;
  const { promise: ended, reject } = Promise.withResolvers<never>();
  const onEnd = (): void => {
    watch.adopt(pending, (reason) => own.abort(reason), {
      origin: post.origin,
      id,
      get answering() {
        return answering;
      },
    });
    reject(request.reason);
  };
  if (request.aborted) onEnd();
  else request.addEventListener("abort", onEnd, { once: true });
  try {
    const value = await Promise.race([pending, ended]);
    stopAtRequestEnd(request, own);
    return value;
  } finally {
    request.removeEventListener("abort", onEnd);
  }
}

/**
 * Answered: from now on the request's end stops the attempt, as any leg's. Made apart from
 * watchedCall so the listener, which lives as long as the request, keeps nothing of its frame
 * (the worker body among it).
 */
function stopAtRequestEnd(request: AbortSignal, own: AbortController): void {
  if (request.aborted) own.abort(request.reason);
  else request.addEventListener("abort", () => own.abort(request.reason), { once: true });
}
