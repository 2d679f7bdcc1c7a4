import { asProxyError, type ProxyError } from "../errors.ts";
import { RETURN_METRICS_HEADER } from "../observability/perf-format.ts";
import type { LegSpan } from "../observability/request-spans.ts";
import { legTraceHeaders } from "../observability/trace-context.ts";
import type { RequestContext } from "../request/context.ts";
import type { Placed } from "../routing/placement.ts";
import type { RoutingRequest } from "../routing/routing-request.ts";
import type { WorkerBody } from "../workers/body-codec.ts";
import type { WorkerPost } from "../workers/client.ts";
import { affinityHeaders, type Affinity } from "./affinity.ts";
import { pause } from "../timers.ts";
import type { PipelineDeps } from "./types.ts";
import type { Role } from "../config/types.ts";

/** One upstream leg: which worker, which body per attempt, what may be retried. */
export interface LegPlan {
  readonly role: Role;
  readonly path: string;
  /** The paired leg's worker, never used for this leg. */
  readonly exclude: string | undefined;
  /** A worker already chosen for the first attempt (generation-first picks the context worker early). */
  readonly first: Placed | undefined;
  /** Retries stay on the first worker (a generation-first hand-off names it). */
  readonly pinned: boolean;
  /** What the routers know of the request; learning routers hear how each attempt ended. */
  readonly routing: RoutingRequest;
  readonly signal: AbortSignal;
  readonly retryable: (error: ProxyError) => boolean;
  /** Headers every attempt carries besides the trace (the internal HMAC, the body's encoding). */
  readonly headers: Readonly<Record<string, string>>;
  /** Body of attempt n, encoded (a context retry gets a fresh disagg_request_id). */
  readonly body: (attempt: number) => WorkerBody;
  /** The disagg_request_id attempt n sent (read after its body was built). */
  readonly sentId: (attempt: number) => bigint;
  /** Sub-agent affinity: signed per attempt, as the signature covers the attempt's id. */
  readonly affinity: Affinity | undefined;
}

/** Runs a leg's attempts: placement, the call, retries, and what each attempt reports. */
export async function runLeg<T>(
  deps: PipelineDeps,
  ctx: RequestContext,
  plan: LegPlan,
  call: (post: WorkerPost) => Promise<T>,
  releaseOnAnswer: boolean,
): Promise<{ origin: string; result: T }> {
  const failedOn: string[] = [];
  for (let attempt = 0; ; attempt++) {
    const placed = placeAttempt(deps, ctx, plan, attempt, failedOn);
    const reservation = ctx.hold(placed.reservation);
    const startedAt = performance.now();
    ctx.hooks.legAttempt(plan.role, placed.worker.origin);
    if (!releaseOnAnswer) ctx.markStreamedGenerationStart();
    const finished = (success: boolean): void => void deps.placement.finished(plan.role, placed.worker.origin, plan.routing, success);
    const body = plan.body(attempt);
    const span = ctx.spans.startLeg({ role: plan.role, origin: placed.worker.origin, path: plan.path, attempt, disaggRequestId: plan.sentId(attempt) });
    try {
      const result = await call(postOf(deps, ctx, plan, placed, body, span, plan.sentId(attempt)));
      if (releaseOnAnswer) {
        reservation.release();
        finished(true);
        span.end();
        const seconds = (performance.now() - startedAt) / 1000;
        ctx.hooks.legCompleted(plan.role, seconds, seconds, placed.worker.origin);
      } else {
        // A streamed leg lasts until the request's end.
        ctx.atEnd((error) => {
          finished(error === undefined);
          span.end(error);
        });
      }
      return { origin: placed.worker.origin, result };
    } catch (thrown) {
      reservation.release();
      finished(false);
      const error = asProxyError(thrown);
      span.end(error);
      const last = attempt >= deps.config.maxRetries || plan.signal.aborted || !plan.retryable(error);
      reportFailure(deps, ctx, plan, placed, error, last ? undefined : attempt + 1);
      if (last) throw error;
      failedOn.push(placed.worker.origin);
      ctx.retried();
      await pause(deps.config.retryDelayMs, plan.signal);
    }
  }
}

function postOf(deps: PipelineDeps, ctx: RequestContext, plan: LegPlan, placed: Placed, body: WorkerBody, span: LegSpan, id: bigint): WorkerPost {
  const headers: Record<string, string> = {
    ...plan.headers,
    ...affinityHeaders(deps.config.internalAuthKey, plan.affinity, plan.role, id),
    ...legTraceHeaders(ctx.trace, span.spanId),
  };
  // Workers are asked for their metrics only when this request's are collected (§5.3).
  if (ctx.perf !== undefined) headers[RETURN_METRICS_HEADER] = "1";
  return {
    role: plan.role,
    origin: placed.worker.origin,
    path: plan.path,
    body,
    signal: plan.signal,
    timeoutMs: deps.config.requestTimeoutMs,
    maxAnswerBytes: deps.config.maxAnswerBytes,
    fetch: deps.workerFetch,
    headers,
  };
}

/** Logs a failed attempt and counts it; `retry` is the number of the retry that follows, if any. */
function reportFailure(deps: PipelineDeps, ctx: RequestContext, plan: LegPlan, placed: Placed, error: ProxyError, retry: number | undefined): void {
  if (error.code !== "CLIENT_GONE") ctx.hooks.legFailed(plan.role, placed.worker.origin);
  if (retry !== undefined) ctx.hooks.legRetry(plan.role);
  deps.logger.warn(`${plan.role} leg failed`, {
    disagg_request_id: ctx.disaggRequestId,
    worker: placed.worker.origin,
    code: error.code,
    status: error.status,
    error: error.message,
    retry: retry === undefined ? undefined : `${retry} of ${deps.config.maxRetries}`,
  });
}

function placeAttempt(deps: PipelineDeps, ctx: RequestContext, plan: LegPlan, attempt: number, failedOn: readonly string[]): Placed {
  if (plan.first && (attempt === 0 || plan.pinned)) {
    if (attempt === 0) return plan.first;
    return deps.placement.reserveAgain(plan.role, ctx.disaggRequestId, plan.first.worker, plan.routing);
  }
  return deps.placement.place({ role: plan.role, requestKey: ctx.disaggRequestId, exclude: plan.exclude, avoid: failedOn, routing: plan.routing });
}
