import type { Role } from "../config/types.ts";
import { ProxyError } from "../errors.ts";
import { inRotation } from "../workers/worker-pool.ts";
import type { RequestContext } from "../request/context.ts";
import { benchmarkGenerationBody } from "./bodies.ts";
import { contextFirst } from "./context-first.ts";
import { generationFirst } from "./generation-first.ts";
import { runGenerationLeg } from "./legs.ts";
import { outcomeOf } from "./outcome.ts";
import { canDisaggregateResponses, responsesWithoutDisaggregation } from "./responses-support.ts";
import { EarlyGenerationFailure } from "./retry.ts";
import type { PipelineDeps, PipelineInput, PipelineOutcome } from "./types.ts";

/**
 * The disaggregated pipeline: context then generation, or both at once in generation-first
 * order, either restarted once before its first byte. Knows no client dialect; throws
 * ProxyError on failure.
 */
export async function runPipeline(deps: PipelineDeps, ctx: RequestContext, input: PipelineInput): Promise<PipelineOutcome> {
  // --max-worker-queue: saturated workers refuse the request here, before its first leg (a rejection, as a leg's failure).
  deps.placement.refuseWhenSaturated(input.routing);
  refuseWithoutRotation(deps);
  if (input.api === "responses" && !deps.settings.benchmarkGenerationOnly && !canDisaggregateResponses(deps.placement.pool)) {
    return responsesWithoutDisaggregation(deps, ctx, input);
  }
  if (deps.settings.schedule === "generation_first") {
    return restartingOnce(deps, ctx, (id, avoid) => generationFirst(deps, ctx, input, id, avoid));
  }
  if (deps.settings.benchmarkGenerationOnly) {
    return outcomeOf(await runGenerationLeg(deps, ctx, input, { exclude: undefined, body: benchmarkGenerationBody(input) }));
  }
  return restartingOnce(deps, ctx, (id, avoid) => contextFirst(deps, ctx, input, id, avoid));
}

/**
 * A role whose listed workers are all out of rotation (as /health's 503 says): the request is
 * refused now, not after a prefill that no generation worker could continue.
 */
function refuseWithoutRotation(deps: PipelineDeps): void {
  const pool = deps.placement.pool;
  const role =
    !deps.settings.benchmarkGenerationOnly && noneInRotation(pool, "context")
      ? "context"
      : noneInRotation(pool, "generation")
        ? "generation"
        : undefined;
  if (role !== undefined) throw new ProxyError("NO_WORKER", 503, `No ${role} worker is available`);
}

/** Asked of every request: the lists are looked through, not filtered into new ones (and no closure is made for it). */
function noneInRotation(pool: PipelineDeps["placement"]["pool"], role: Role): boolean {
  const workers = pool.all(role);
  return workers.length > 0 && !workers.some(inRotation);
}

/** One run of a pipeline under `id`; `avoid`: the generation worker a first run failed on. */
export type PipelineRun = (id: bigint, avoid: string | undefined) => Promise<PipelineOutcome>;

/**
 * Restart before the first byte, for both schedule styles: a generation leg that failed before
 * any of its bytes reached the client (retry.ts, restartsBeforeFirstByte) runs once more, on a
 * fresh context and generation pair under a new disagg_request_id, the failed generation worker
 * avoided. The client's own ids (Responses, Anthropic) live in its body, sent unchanged, so
 * they do not change. Never after the first bytes: from then on a failure is reported in-band.
 */
async function restartingOnce(deps: PipelineDeps, ctx: RequestContext, run: PipelineRun): Promise<PipelineOutcome> {
  try {
    return await run(ctx.disaggRequestId, undefined);
  } catch (thrown) {
    if (!(thrown instanceof EarlyGenerationFailure)) throw thrown;
    const id = deps.ids.next();
    deps.logger.info("generation failed before any byte reached the client: once more on a fresh context and generation pair", {
      disagg_request_id: ctx.disaggRequestId,
      failed_id: thrown.id,
      restart_id: id,
      worker: thrown.worker,
      code: thrown.error.code,
      error: thrown.error.message,
    });
    ctx.retried();
    // The first run's legs may still be held (a coordinator keys them by role and req_id): the new ones go under the new id.
    ctx.placementKey = id;
    try {
      return await run(id, thrown.worker);
    } catch (again) {
      throw again instanceof EarlyGenerationFailure ? again.error : again;
    }
  }
}
