import type { RequestContext } from "../request/context.ts";
import { contextFirst } from "./context-first.ts";
import { generationFirst } from "./generation-first.ts";
import { canDisaggregateResponses, responsesWithoutDisaggregation } from "./responses-support.ts";
import type { PipelineDeps, PipelineInput, PipelineOutcome } from "./types.ts";

/**
 * The disaggregated pipeline: context then generation, or both at once in generation-first
 * order. Knows no client dialect; throws ProxyError on failure.
 */
export async function runPipeline(deps: PipelineDeps, ctx: RequestContext, input: PipelineInput): Promise<PipelineOutcome> {
  // --max-worker-queue: saturated workers refuse the request here, before its first leg (a rejection, as a leg's failure).
  deps.placement.refuseWhenSaturated(input.routing);
  if (input.api === "responses" && !deps.config.benchmarkGenerationOnly && !canDisaggregateResponses(deps.placement.pool)) {
    return responsesWithoutDisaggregation(deps, ctx, input);
  }
  return deps.config.schedule === "generation_first" ? generationFirst(deps, ctx, input) : contextFirst(deps, ctx, input);
}
