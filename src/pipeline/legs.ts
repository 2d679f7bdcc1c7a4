import { asProxyError, type ProxyError } from "../errors.ts";
import type { JsonObject } from "../json.ts";
import { legTraceHeaders } from "../observability/trace-context.ts";
import type { RequestContext } from "../request/context.ts";
import type { Placed } from "../routing/placement.ts";
import type { Role } from "../routing/worker-pool.ts";
import { postForJson, postForStream, type WorkerPost } from "../workers/client.ts";
import { contextLegRetryable, generationLegRetryable, pause } from "./retry.ts";
import { WORKER_PATH, type PipelineDeps, type PipelineInput } from "./types.ts";

/** One upstream leg: which worker, which body per attempt, what may be retried. */
interface LegPlan {
  readonly role: Role;
  readonly path: string;
  /** The paired leg's worker, never used for this leg. */
  readonly exclude: string | undefined;
  /** A worker already chosen for the first attempt (generation-first picks the context worker early). */
  readonly first: Placed | undefined;
  /** Retries stay on the first worker (a generation-first hand-off names it). */
  readonly pinned: boolean;
  readonly signal: AbortSignal;
  readonly retryable: (error: ProxyError) => boolean;
  /** Body of attempt n (a context retry gets a fresh disagg_request_id). */
  readonly body: (attempt: number) => string;
}

export interface ContextLegResult {
  readonly answer: JsonObject;
  readonly origin: string;
  /** The disagg_request_id of the attempt that answered. */
  readonly sentId: bigint;
}

export async function runContextLeg(
  deps: PipelineDeps,
  ctx: RequestContext,
  input: PipelineInput,
  options: { exclude?: string; first?: Placed; pinned?: boolean; signal?: AbortSignal; body: (id: bigint) => JsonObject },
): Promise<ContextLegResult> {
  const ids: bigint[] = [];
  const idOf = (attempt: number): bigint => {
    ids[attempt] ??= attempt === 0 || options.pinned ? ctx.disaggRequestId : deps.ids.next();
    return ids[attempt];
  };
  let sentId = ctx.disaggRequestId;
  const { origin, result } = await runLeg(deps, ctx, {
    role: "context",
    path: WORKER_PATH[input.api],
    exclude: options.exclude,
    first: options.first,
    pinned: options.pinned ?? false,
    signal: options.signal ?? ctx.signal,
    retryable: contextLegRetryable,
    body: (attempt) => {
      sentId = idOf(attempt);
      return JSON.stringify(options.body(sentId));
    },
  }, (post) => postForJson(post), true);
  ctx.contextWorker = origin;
  return { answer: result.body, origin, sentId };
}

export async function runGenerationLeg(
  deps: PipelineDeps,
  ctx: RequestContext,
  input: PipelineInput,
  options: { exclude: string | undefined; signal?: AbortSignal; body: JsonObject },
): Promise<{ kind: "json"; body: JsonObject } | { kind: "stream"; response: Response }> {
  const text = JSON.stringify(options.body);
  const plan: LegPlan = {
    role: "generation",
    path: WORKER_PATH[input.api],
    exclude: options.exclude,
    first: undefined,
    pinned: false,
    signal: options.signal ?? ctx.signal,
    retryable: generationLegRetryable,
    body: () => text,
  };
  if (input.stream) {
    const { origin, result } = await runLeg(deps, ctx, plan, (post) => postForStream(post), false);
    ctx.generationWorker = origin;
    return { kind: "stream", response: result };
  }
  const { origin, result } = await runLeg(deps, ctx, plan, (post) => postForJson(post), true);
  ctx.generationWorker = origin;
  return { kind: "json", body: result.body };
}

async function runLeg<T>(
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
    ctx.hooks.legAttempt(plan.role);
    if (!releaseOnAnswer) ctx.markStreamedGenerationStart();
    try {
      const result = await call(postOf(deps, ctx, plan, placed, attempt));
      if (releaseOnAnswer) {
        reservation.release();
        const seconds = (performance.now() - startedAt) / 1000;
        ctx.hooks.legCompleted(plan.role, seconds, seconds);
      }
      return { origin: placed.worker.origin, result };
    } catch (thrown) {
      reservation.release();
      const error = asProxyError(thrown);
      const last = attempt >= deps.config.maxRetries || plan.signal.aborted || !plan.retryable(error);
      reportFailure(deps, ctx, plan, placed, error, last ? undefined : attempt + 1);
      if (last) throw error;
      failedOn.push(placed.worker.origin);
      ctx.retries++;
      await pause(deps.config.retryDelayMs, plan.signal);
    }
  }
}

function postOf(deps: PipelineDeps, ctx: RequestContext, plan: LegPlan, placed: Placed, attempt: number): WorkerPost {
  return {
    role: plan.role,
    origin: placed.worker.origin,
    path: plan.path,
    body: plan.body(attempt),
    signal: plan.signal,
    timeoutMs: deps.config.requestTimeoutMs,
    fetch: deps.workerFetch,
    headers: legTraceHeaders(ctx.trace),
  };
}

/** Logs a failed attempt and counts it; `retry` is the number of the retry that follows, if any. */
function reportFailure(deps: PipelineDeps, ctx: RequestContext, plan: LegPlan, placed: Placed, error: ProxyError, retry: number | undefined): void {
  if (error.code !== "CLIENT_GONE") ctx.hooks.legFailed(plan.role);
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
    const reservation = deps.placement.table.reserve(ctx.disaggRequestId, plan.role, plan.first.worker.origin);
    return { worker: plan.first.worker, reservation };
  }
  return deps.placement.place({ role: plan.role, requestKey: ctx.disaggRequestId, exclude: plan.exclude, avoid: failedOn });
}
