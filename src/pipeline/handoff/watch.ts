/**
 * The watch on a context-first hand-off's legs (one built here for each): whether an attempt
 * may have reached a worker (so may have claimed the hand-off), and what becomes of an attempt
 * still in flight when its request ends. The settler (./settler.ts) decides; the leg runner
 * only reports.
 */
import { asProxyError } from "../../errors.ts";
import type { RequestContext } from "../../request/context.ts";
import type { JsonAnswer } from "../../workers/client.ts";
import type { WorkerPost } from "../../workers/worker-call.ts";
import type { HandoffSettler, SettleReason, UnclaimedHandoff } from "./settler.ts";

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
 * What a watched attempt follows: its request's end (the RequestContext itself, whose own list
 * of listeners costs less than its signal's), or any signal through the signal's listeners.
 */
export interface AttemptEnding {
  readonly signal: AbortSignal;
  /** Runs `listener` once `signal` aborts (at once if it has). */
  onLegsAborted(listener: () => void): void;
  offLegsAborted(listener: () => void): void;
  /** Aborts `controller` with the signal's reason once it aborts (at once if it has). */
  abortAtEnd(controller: AbortController): void;
}

/** A signal's abort as an AttemptEnding (a leg whose signal is not its request's own: generation-first's pairs). */
export function signalEnding(signal: AbortSignal): AttemptEnding {
  const onLegsAborted = (listener: () => void): void => {
    if (signal.aborted) listener();
    else signal.addEventListener("abort", listener, { once: true });
  };
  return {
    signal,
    onLegsAborted,
    offLegsAborted: (listener) => signal.removeEventListener("abort", listener),
    abortAtEnd: (controller) => onLegsAborted(() => controller.abort(signal.reason)),
  };
}

/**
 * An attempt of a hand-off's generation leg, on an abort of its own: the request's end hands an
 * attempt still in flight to the watch (which stops it once it claimed the hand-off) and fails
 * the attempt for the request at once. A stream that answered (`outlastsAnswer`) follows the
 * request's end again; a whole answer is over, and nothing is left to stop.
 */
export async function watchedCall<T>(
  call: (post: WorkerPost) => Promise<T>,
  /** The attempt's call, on the watch's own signal, telling the watch when its answer began. */
  post: (signal: AbortSignal, onAnswer: () => void) => WorkerPost,
  ending: AttemptEnding,
  watch: HandoffWatch,
  id: bigint,
  outlastsAnswer: boolean,
  /** Told of an attempt the request's end leaves running, so what it holds lasts as long as it (a coordinator's lease). */
  keep?: { keepUntil(settled: Promise<unknown>): void },
): Promise<T> {
  const request = ending.signal;
  const own = new AbortController();
  let answering = false;
  const sent = post(own.signal, () => (answering = true));
  const pending = call(sent);
  watch.reached = true;
  // The answer, or the request's end (onEnd), whichever comes first: no race and its list made per attempt.
  const { promise: settled, resolve, reject } = Promise.withResolvers<T>();
  pending.then(resolve, reject);
  const onEnd = (): void => {
    keep?.keepUntil(pending);
    watch.adopt(pending, (reason) => own.abort(reason), {
      origin: sent.origin,
      id,
      get answering() {
        return answering;
      },
    });
    reject(request.reason);
  };
  ending.onLegsAborted(onEnd);
  try {
    const value = await settled;
    // Answered: from now on the request's end stops the attempt, as any leg's.
    if (outlastsAnswer) ending.abortAtEnd(own);
    return value;
  } finally {
    ending.offLegsAborted(onEnd);
  }
}

/**
 * A client that left during the context phase: the phase gets this long to begin answering.
 * One that does (its KV committed: an abort would free nothing, emulator/kv/held-kv.ts cites
 * upstream) is read to its end and its hand-off settled; one that does not is aborted then, so
 * a long prefill stops costing. Aborting at once left the hand-offs of clients that left as
 * the phase ended (5 of 20 in bench/faults/handoff-leave.ts); letting every phase finish cost
 * the context worker 135 ms a client on a 300 ms prefill (bench/RESULTS.md, "Hand-offs of
 * clients that leave"). The grace bounds that cost and covers the answer's way to the proxy.
 */
const CONTEXT_ABORT_GRACE_MS = 100;

/** The context leg's watch, for a client that leaves during the context phase (see CONTEXT_ABORT_GRACE_MS). */
export function contextWatch(
  settler: HandoffSettler | undefined,
  ctx: RequestContext,
  leftBy: (answer: JsonAnswer, attempt: AdoptedAttempt) => UnclaimedHandoff | undefined,
): HandoffWatch | undefined {
  return settler === undefined ? undefined : new ContextWatch(settler, ctx, leftBy);
}

/** A class, not an object literal: its method is shared, not a closure made per request. */
class ContextWatch implements HandoffWatch {
  reached = false;
  readonly #settler: HandoffSettler;
  readonly #ctx: RequestContext;
  readonly #leftBy: (answer: JsonAnswer, attempt: AdoptedAttempt) => UnclaimedHandoff | undefined;

  constructor(
    settler: HandoffSettler,
    ctx: RequestContext,
    leftBy: (answer: JsonAnswer, attempt: AdoptedAttempt) => UnclaimedHandoff | undefined,
  ) {
    this.#settler = settler;
    this.#ctx = ctx;
    this.#leftBy = leftBy;
  }

  adopt(pending: Promise<unknown>, abort: (reason: unknown) => void, attempt: AdoptedAttempt): void {
    const ctx = this.#ctx;
    const leftBy = this.#leftBy;
    // A phase that has not begun answering within the grace is far from done: abort it then.
    if (!attempt.answering) setTimeout(() => attempt.answering || abort(ctx.signal.reason), CONTEXT_ABORT_GRACE_MS);
    this.#settler.adopt(
      pending,
      abort,
      {
        reason: settleReason(ctx, ctx.signal.reason),
        follow: (value) => Promise.resolve(isJsonAnswer(value) ? leftBy(value, attempt) : undefined),
        onFailure: () => undefined,
      },
      { role: "context", origin: attempt.origin, requestKey: ctx.disaggRequestId },
    );
  }
}

function isJsonAnswer(value: unknown): value is JsonAnswer {
  return typeof value === "object" && value !== null && "body" in value && "bytes" in value && !(value instanceof Response);
}

/** The generation leg's watch: an attempt the request's end leaves in flight runs until it claimed the hand-off. */
export function generationWatch(settler: HandoffSettler | undefined, ctx: RequestContext, handoff: UnclaimedHandoff): HandoffWatch {
  return new GenerationWatch(settler, ctx, handoff);
}

/** A class, not an object literal: its method is shared, not a closure made per request. */
class GenerationWatch implements HandoffWatch {
  reached = false;
  readonly #settler: HandoffSettler | undefined;
  readonly #ctx: RequestContext;
  readonly #handoff: UnclaimedHandoff;

  constructor(settler: HandoffSettler | undefined, ctx: RequestContext, handoff: UnclaimedHandoff) {
    this.#settler = settler;
    this.#ctx = ctx;
    this.#handoff = handoff;
  }

  adopt(pending: Promise<unknown>, abort: (reason: unknown) => void, attempt: AdoptedAttempt): void {
    const ctx = this.#ctx;
    const settler = this.#settler;
    if (settler === undefined) abort(ctx.signal.reason);
    else {
      // It runs on (a non-streamed one to its last token): it keeps the request's --max-inflight slot.
      const outcome = settler.generationOutcome(this.#handoff, settleReason(ctx, ctx.signal.reason));
      settler.adopt(pending, abort, outcome, {
        role: "generation",
        origin: attempt.origin,
        requestKey: ctx.disaggRequestId,
        releaseAdmission: ctx.keepAdmission(),
      });
    }
  }
}

/** Why a hand-off the request leaves is settled: the request's end, else the failure `thrown`. */
export function settleReason(ctx: RequestContext, thrown: unknown): SettleReason {
  const code = ctx.signal.aborted ? asProxyError(ctx.signal.reason).code : asProxyError(thrown).code;
  if (code === "DRAINING") return "draining";
  if (code === "CLIENT_GONE") return "client_gone";
  if (code === "NO_WORKER" || code === "OVERLOADED" || code === "MODEL_NOT_FOUND") return "no_generation_worker";
  return "generation_unsent";
}
