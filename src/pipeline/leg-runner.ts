import { asProxyError, type ProxyError } from "../errors.ts";
import type { RequestContext } from "../request/context.ts";
import type { Placed } from "../routing/placement.ts";
import { pause } from "../timers.ts";
import { fetchAnswer, postForJson, type JsonAnswer, type RawAnswer } from "../workers/client.ts";
import { postForStream, type WorkerStream } from "../workers/stream-call.ts";
import type { WorkerPost } from "../workers/worker-call.ts";
import { signalEnding, watchedCall } from "./handoff/watch.ts";
import { LegAttempt } from "./leg-attempt.ts";
import type { LegPlan, LegResult } from "./leg-plan.ts";
import { placeForRequest } from "./placing.ts";
import { keepingRouteHint, withRouteHint } from "./route-hint.ts";
import { dropField, fitToWorker, rejectedField } from "./protocol-fit.ts";
import { neverReachedEngine, nextAttempt, workerGone, type NextAttempt } from "./retry.ts";
import type { PipelineDeps } from "./types.ts";

/** A non-streamed leg: over once the worker answered. */
export function runJsonLeg(deps: PipelineDeps, ctx: RequestContext, plan: LegPlan): Promise<LegResult<JsonAnswer>> {
  return runAttempts(deps, ctx, plan, postForJson, "answer");
}

/** A streamed leg: the worker's stream, which lasts until the request's end. */
export function runStreamLeg(deps: PipelineDeps, ctx: RequestContext, plan: LegPlan): Promise<LegResult<WorkerStream>> {
  return runAttempts(deps, ctx, plan, postForStream, "request end");
}

/** A one-shot call (GET /v1/models, count_tokens): the worker's answer as it came, any status. */
export function runOneShotLeg(
  deps: PipelineDeps,
  ctx: RequestContext,
  plan: LegPlan,
  method: "GET" | "POST",
): Promise<LegResult<RawAnswer>> {
  return runAttempts(deps, ctx, plan, (post) => fetchAnswer({ ...post, method }), "answer");
}

/** The next attempt of a leg: its number, the id it is sent under, and how it goes. */
interface Step {
  readonly attempt: number;
  readonly id: bigint;
  /** Attempts so far outside --max-retries. */
  readonly freeRetries: number;
  /** Sent on a fresh connection (a resend of a request a reused one lost unread). */
  readonly resend: boolean;
  /** An optional field a worker rejected was dropped: not twice. */
  readonly fieldDropped: boolean;
  /** Its worker, reserved again, when it stays on the last one. */
  readonly again: Placed | undefined;
}

/** Runs a leg's attempts: placement, the call, and what nextAttempt decides after a failure; each attempt is one LegAttempt. */
async function runAttempts<T>(
  deps: PipelineDeps,
  ctx: RequestContext,
  plan: LegPlan,
  call: (post: WorkerPost) => Promise<T>,
  lastsUntil: "answer" | "request end",
): Promise<LegResult<T>> {
  const failedOn: string[] = [];
  let step: Step = { attempt: 0, id: plan.id, freeRetries: 0, resend: false, fieldDropped: false, again: undefined };
  // The last attempt's placement: a worker reserved again for the leg keeps the rank chosen for it.
  let previous: Placed | undefined;
  for (;;) {
    const { attempt, id } = step;
    const placing = step.again === undefined ? placeAttempt(deps, ctx, plan, attempt, failedOn) : keepingRouteHint(step.again, previous);
    // Awaited only when a coordinator is asked: a local placement costs the attempt no turn.
    // oxlint-disable-next-line no-await-in-loop -- each attempt is placed after the one before failed
    const placed = placing instanceof Promise ? await placing : placing;
    previous = placed;
    const leg = new LegAttempt(deps, ctx, plan, placed, attempt, id);
    const sent = fitToWorker(withRouteHint(plan.body.of(id), placed), leg.worker.protocol.accepts);
    const reachedBefore = plan.handoff?.reached ?? false;
    try {
      const body = plan.body.codec.encode(sent, plan.body.source);
      const { resend } = step;
      const result = await (plan.handoff === undefined
        ? call(leg.post(plan, body, resend))
        : watchedCall(
            call,
            (signal, onAnswer) => leg.post(plan, body, resend, signal, onAnswer),
            plan.signal === ctx.signal ? ctx : signalEnding(plan.signal),
            plan.handoff,
            id,
            lastsUntil === "request end",
            leg,
          ));
      // A streamed leg lasts until the request's end, which completes it.
      if (lastsUntil === "answer") {
        leg.answered();
        return { origin: leg.origin, id, result };
      }
      return { origin: leg.origin, id, result, streamed: leg.endsWithRequest() };
    } catch (thrown) {
      const error = asProxyError(thrown);
      if (plan.handoff !== undefined && neverReachedEngine(error)) plan.handoff.reached = reachedBefore;
      const next = nextAttempt(error, {
        role: plan.role,
        attempt,
        freeRetries: step.freeRetries,
        maxRetries: deps.settings.maxRetries,
        aborted: plan.signal.aborted,
        pinned: plan.workers.pinned ?? false,
        wholeAnswer: lastsUntil === "answer",
        resend: step.resend,
        rejectedField: step.fieldDropped ? undefined : rejectedField(error, sent, plan.path),
        retryable: plan.retryable,
        retryOpensStream: retryOpensStream(deps, ctx),
      });
      const again = await afterFailure(deps, ctx, plan, { leg, error, next, attempt, resend: step.resend }, failedOn);
      step = {
        attempt: attempt + 1,
        id: next.kind === "resend" ? id : plan.freshIdOnRetry ? deps.ids.next() : plan.id,
        freeRetries: step.freeRetries + (next.kind === "resend" || next.kind === "elsewhere" ? 1 : 0),
        resend: next.kind === "resend",
        fieldDropped: step.fieldDropped || next.kind === "without field",
        again,
      };
    }
  }
}

/** Carries out what follows a failed attempt: the worker reserved again when the next attempt stays on it; throws when the leg fails. */
async function afterFailure(
  deps: PipelineDeps,
  ctx: RequestContext,
  plan: LegPlan,
  failed: {
    readonly leg: LegAttempt;
    readonly error: ProxyError;
    readonly next: NextAttempt;
    readonly attempt: number;
    readonly resend: boolean;
  },
  failedOn: string[],
): Promise<Placed | undefined> {
  const { leg, error, next } = failed;
  const sameWorker = (): Placed => deps.placement.reserveAgain(plan.role, ctx.placementKey, leg.worker, plan.routing);
  const fields = { disagg_request_id: ctx.disaggRequestId, worker: leg.origin };
  if (next.kind === "resend") {
    leg.untried(error);
    deps.logger.info(`${plan.role} leg: a reused connection closed before any answer; once more on a fresh connection`, {
      ...fields,
      error: error.message,
    });
    ctx.retried();
    return sameWorker();
  }
  // An aborted leg's error is its abort's reason (its paired leg's failure): it says nothing of this worker.
  if (!plan.signal.aborted && workerGone(error, failed.resend)) takeOutOfRotation(deps, plan.role, leg.origin, error);
  else if (next.kind === "elsewhere" || (next.kind === "fail" && next.starting)) {
    const wasReady = deps.placement.pool.markStarting(leg.origin);
    const state = error.draining ? "draining" : "starting";
    deps.logger.info(`${plan.role} leg: the worker answered that it is ${state}; out of rotation until its health check passes`, {
      ...fields,
      state,
      was_ready: wasReady,
      next: next.kind === "fail" ? "the request restarts on a fresh pair" : "the leg goes to another worker",
    });
  }
  if (next.kind === "elsewhere") leg.untried(error);
  else {
    // The number of the retry that follows, if any.
    const retry = next.kind === "fail" ? undefined : failed.attempt + 1;
    if (next.kind === "without field") dropField(deps.logger, leg.worker, next.field);
    leg.failed(error, retry !== undefined, next.kind !== "without field" && next.saysNothing);
    deps.logger.warn(`${plan.role} leg failed`, {
      ...fields,
      code: error.code,
      status: error.status,
      error: error.message,
      retry: retry === undefined ? undefined : `${retry} of ${deps.settings.maxRetries}`,
    });
    if (next.kind === "fail") throw error;
  }
  ctx.retried();
  if (next.kind === "without field") return sameWorker();
  failedOn.push(leg.origin);
  if (next.kind === "retry") await pause(deps.settings.retryDelayMs, plan.signal);
  return undefined;
}

/** A worker nothing serves at (retry.ts, workerGone): out of rotation at once, every role of its origin, until a health check passes. */
function takeOutOfRotation(deps: PipelineDeps, role: string, origin: string, error: ProxyError): void {
  const wasReady = deps.placement.pool.markGone(origin);
  if (wasReady)
    deps.logger.warn("worker out of rotation: nothing serves at its address; back once a health check passes", {
      worker: origin,
      role,
      reason: error.neverSent ? "connection refused" : "connection reset before any answer",
    });
}

function placeAttempt(
  deps: PipelineDeps,
  ctx: RequestContext,
  plan: LegPlan,
  attempt: number,
  failedOn: readonly string[],
): Placed | Promise<Placed> {
  const { first, pinned, avoid } = plan.workers;
  if (first && (attempt === 0 || pinned === true)) {
    if (attempt === 0) return first;
    return keepingRouteHint(deps.placement.reserveAgain(plan.role, ctx.placementKey, first.worker, plan.routing), first);
  }
  const request = {
    role: plan.role,
    requestKey: ctx.placementKey,
    exclude: plan.workers.exclude,
    avoid: avoid === undefined ? failedOn : [...avoid, ...failedOn],
    routing: plan.routing,
    requires: plan.workers.requires,
    signal: plan.signal,
  };
  return plan.workers.leastLoaded === true ? deps.placement.placeLeastLoaded(request) : placeForRequest(deps, ctx, request);
}

/** Whether a retry after --retry-delay-ms would begin only after the client's stream opened (it has not yet). */
function retryOpensStream(deps: PipelineDeps, ctx: RequestContext): boolean {
  if (!ctx.stream) return false;
  const elapsed = ctx.elapsedMs();
  return elapsed < deps.settings.streamStartWaitMs && elapsed + deps.settings.retryDelayMs >= deps.settings.streamStartWaitMs;
}
