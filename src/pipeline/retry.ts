import type { Role } from "../config/types.ts";
import { asProxyError, type ProxyError } from "../errors.ts";
import type { RequestContext } from "../request/context.ts";
import type { Capability } from "../workers/protocol.ts";

/**
 * Retry rules (reference §4.5, tightened): a context leg is retried on transport failures,
 * timeouts, 408, 429 and 5xx; a generation leg only when the request provably never reached
 * the worker, so nothing that may have been delivered is ever replayed.
 */
export function contextLegRetryable(error: ProxyError): boolean {
  switch (error.code) {
    case "WORKER_UNREACHABLE":
    case "WORKER_TIMEOUT":
      return true;
    case "WORKER_HTTP_ERROR":
      return error.status === 408 || error.status === 429 || error.status >= 500;
    default:
      return false;
  }
}

export function generationLegRetryable(error: ProxyError): boolean {
  return error.code === "WORKER_UNREACHABLE" && error.neverSent;
}

/**
 * The worker's engine never took the request: it was refused (connection refused, reset unread),
 * or the worker turned it away as overloaded or unavailable (429, 503, 529) before scheduling it. A
 * generation request that failed so never pulled its hand-off's KV.
 */
export function neverReachedEngine(error: ProxyError): boolean {
  if (error.code === "WORKER_UNREACHABLE") return error.neverSent || error.unread;
  return error.code === "WORKER_HTTP_ERROR" && (error.status === 429 || error.status === 503 || error.status === 529);
}

/**
 * A generation worker's answer that proves it pulled its hand-off's KV: a KV transfer error (the
 * pull began; the context worker no longer holds the KV, or will free it by its own timeout).
 * Any other failure before the first byte may have come before the pull (a worker failing
 * before it reads the request does), so the hand-off is claimed then; a claim that finds the KV
 * gone costs one refused request (handoff/settler.ts).
 */
export function provesKvPulled(error: ProxyError): boolean {
  return (error.code === "WORKER_HTTP_ERROR" || error.code === "WORKER_BAD_ANSWER") && /\bKV\b[^.]*\btransfer/i.test(error.message);
}

/**
 * A request lost on a reused connection before any byte of an answer: sent once more, at once,
 * to the same worker on a fresh connection, under the same id, for both legs and outside
 * --max-retries, as TensorRT-LLM's own client does (#14562). It assumes the proxy reaches the
 * worker directly; what a middlebox that resets after forwarding costs, and why a generation
 * resend's 5xx says nothing of its worker (resentAfterPull): docs/failure-semantics.md, "A stale
 * pooled connection". A transport that knows the connection was new reports no such loss.
 */
export function lostUnread(error: ProxyError): boolean {
  return error.code === "WORKER_UNREACHABLE" && error.unread;
}

/**
 * A worker that answered its start-up 503 (`x-trtllm-server-state: starting`) to a request:
 * upstream's readiness gate (tensorrt_llm/serve/readiness.py @ e6c89c08) answers it before any
 * route runs, so the request provably did nothing, on either leg: a generation request pulled
 * no KV. It goes to another worker at once, outside --max-retries, and the worker leaves
 * rotation until a health check passes (it restarted since its last one). Each such answer
 * takes a worker out of rotation, so these retries are bounded by the fleet. A leg pinned to
 * its worker (generation-first's context leg, which the hand-off names; a generation worker
 * reserved by conditional disaggregation) cannot move: the request restarts on a fresh pair
 * instead (restartsBeforeFirstByte).
 */
export function workerStarting(error: ProxyError): boolean {
  return error.code === "WORKER_HTTP_ERROR" && error.starting;
}

/**
 * A generation leg that failed so, before any byte of it reached the client, is run again once
 * on a fresh context and generation pair (orchestrate.ts, restartingOnce): the worker broke, stalled or
 * refused for a reason of its own (5xx, timeout, lost connection, a broken answer or stream).
 * Not a 4xx (the request itself would fail again), nor an overload, a client gone or a drain.
 */
export function restartsBeforeFirstByte(error: ProxyError): boolean {
  switch (error.code) {
    case "WORKER_TIMEOUT":
    case "WORKER_UNREACHABLE":
    case "WORKER_BAD_ANSWER":
    case "WORKER_STREAM_BROKEN":
      return true;
    case "WORKER_HTTP_ERROR":
      // An overloaded fleet (503, 529) is told to the client, whose back-off eases it; running
      // the prefill again would add to the load. A worker's start-up 503 is not overload: that
      // worker is out of rotation now (workerStarting), and the fresh pair goes elsewhere.
      return error.starting || (error.status >= 500 && error.status !== 503 && error.status !== 529);
    default:
      return false;
  }
}

/** A generation leg that failed before any of its bytes reached the client, and may run again. */
export class EarlyGenerationFailure extends Error {
  readonly error: ProxyError;
  readonly worker: string | undefined;
  readonly id: bigint;

  constructor(error: ProxyError, worker: string | undefined, id: bigint) {
    super(error.message, { cause: error });
    this.error = error;
    this.worker = worker;
    this.id = id;
  }
}

/** A generation leg's failure as thrown: marked for the one restart when it happened before any byte reached the client. */
export function restartable(ctx: RequestContext, thrown: unknown, worker: string | undefined, id: bigint): unknown {
  const error = asProxyError(thrown);
  return !ctx.signal.aborted && restartsBeforeFirstByte(error) ? new EarlyGenerationFailure(error, worker, id) : thrown;
}

/**
 * A non-streamed generation call's timeout bounds the whole output, whose length the client
 * chose (max_tokens): a long answer, not a wedged worker. Counted against the worker, a client
 * asking for more than --request-timeout's worth ejected healthy generation workers (binary,
 * --request-timeout 1 and 2 s answers: both generation workers ejected in turn).
 */
export function outputLengthTimeout(role: Role, error: ProxyError): boolean {
  return role === "generation" && error.code === "WORKER_TIMEOUT";
}

/**
 * A generation request resent on a fresh connection (lostUnread) that the worker answers with
 * a 5xx: when a middlebox reset the first copy after forwarding it whole, that copy pulled the
 * KV, and the resend's KV transfer fails (a 500) on a healthy worker. Which of the two it was
 * cannot be told from the answer, so a resend's 5xx counts toward no ejection; a worker
 * failing so for its own reasons still fails its other requests.
 */
export function resentAfterPull(role: Role, error: ProxyError): boolean {
  return role === "generation" && error.code === "WORKER_HTTP_ERROR" && error.status >= 500;
}

/** Where a leg stands when one of its attempts failed: what nextAttempt decides on. */
export interface AttemptState {
  readonly role: Role;
  /** The failed attempt's number (0: the first). */
  readonly attempt: number;
  /** How many attempts before it were outside --max-retries (fresh-connection resends, workers starting). */
  readonly freeRetries: number;
  readonly maxRetries: number;
  /** The leg was stopped: its request ended, or its paired leg failed (generation-first aborts the pair). */
  readonly aborted: boolean;
  /** The leg stays on its first worker (a generation-first hand-off names it). */
  readonly pinned: boolean;
  /** The leg's answer comes whole (not a stream that lasts until the request's end). */
  readonly wholeAnswer: boolean;
  /** The failed attempt was a fresh-connection resend (lostUnread). */
  readonly resend: boolean;
  /** The optional field the worker's 400 rejected (protocol-fit.ts), unless one was dropped already. */
  readonly rejectedField: Capability | undefined;
  readonly retryable: (error: ProxyError) => boolean;
  /** A retry now would begin only after a streamed request's response opened (--stream-start-wait-ms). */
  readonly retryOpensStream: boolean;
}

/** What follows a failed attempt. `saysNothing`: the failure counts against no worker. */
export type NextAttempt =
  /** Once more to the same worker on a fresh connection, under the same id, outside --max-retries. */
  | { readonly kind: "resend" }
  /**
   * The worker is starting, or gone (workerGone): it leaves rotation and the leg moves to
   * another at once, outside --max-retries (bounded by the fleet: each such worker leaves it).
   */
  | { readonly kind: "elsewhere"; readonly gone: boolean }
  /** Once more to the same worker without the field it rejected (a 400 ran nothing). */
  | { readonly kind: "without field"; readonly field: Capability }
  /** Another worker, after --retry-delay-ms, within --max-retries. */
  | { readonly kind: "retry"; readonly saysNothing: boolean }
  /** The leg fails; `starting`: its pinned worker answered that it is starting (the request restarts on a fresh pair). */
  | { readonly kind: "fail"; readonly saysNothing: boolean; readonly starting: boolean };

const RESEND: NextAttempt = { kind: "resend" };
const ELSEWHERE: NextAttempt = { kind: "elsewhere", gone: false };
const GONE: NextAttempt = { kind: "elsewhere", gone: true };

/**
 * Nothing serves at the worker's address now: the connection was refused, or a fresh
 * connection (the resend of a request a reused one lost) was reset before any answer. That is
 * decisive, as a refused connection is to Envoy and HAProxy: the worker leaves rotation at once
 * until a health check passes, and the leg goes to another worker without --retry-delay-ms.
 */
export function workerGone(error: ProxyError, resend: boolean): boolean {
  return error.code === "WORKER_UNREACHABLE" && (error.neverSent || (resend && !error.unread));
}

/** The one retry decision of a leg: the rules above, in their order. */
export function nextAttempt(error: ProxyError, state: AttemptState): NextAttempt {
  if (!state.aborted) {
    if (lostUnread(error)) return RESEND;
    if (workerStarting(error)) return state.pinned ? { kind: "fail", saysNothing: false, starting: true } : ELSEWHERE;
    // A generation resend's first copy may have been read (and its KV pulled): that one restarts on a fresh pair instead.
    const unread = state.role === "context" || !state.resend;
    if (workerGone(error, state.resend) && unread && !state.pinned && state.retryable(error)) return GONE;
    if (state.rejectedField !== undefined) return { kind: "without field", field: state.rejectedField };
  }
  // Stopped by the proxy, a whole generation answer cut by its call's timeout, a resend's 5xx
  // on a generation leg: nothing said of this worker.
  const saysNothing =
    state.aborted || (state.wholeAnswer && outputLengthTimeout(state.role, error)) || (state.resend && resentAfterPull(state.role, error));
  const last =
    state.attempt - state.freeRetries >= state.maxRetries ||
    state.aborted ||
    !state.retryable(error) ||
    (state.retryOpensStream && overloaded(error));
  return last ? { kind: "fail", saysNothing, starting: false } : { kind: "retry", saysNothing };
}

/**
 * A worker turned the request away as overloaded (429, 503, 529; not starting nor draining). Its
 * retry waits --retry-delay-ms; one that would begin only after a streamed request's response
 * opened is not made: the client gets the overload as its status, with Retry-After, not a 200
 * then an in-band error (its own back-off keys on the status; Claude Code and Codex read an
 * in-band overload as a broken stream).
 */
export function overloaded(error: ProxyError): boolean {
  return error.code === "WORKER_HTTP_ERROR" && !error.starting && (error.status === 429 || error.status === 503 || error.status === 529);
}
