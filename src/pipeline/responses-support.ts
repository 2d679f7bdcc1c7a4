import type { Role } from "../config/types.ts";
import { ProxyError } from "../errors.ts";
import type { RequestContext } from "../request/context.ts";
import { versionNeededFor } from "../workers/protocol.ts";
import type { WorkerPool } from "../workers/worker-pool.ts";
import { runGenerationLeg } from "./legs.ts";
import { outcomeOf } from "./outcome.ts";
import type { PipelineDeps, PipelineInput, PipelineOutcome } from "./types.ts";

/**
 * /v1/responses is disaggregated only by workers with NVIDIA/TensorRT-LLM#18497; an older one
 * ignores disaggregated_params there (ResponsesRequest is extra="allow") and answers the whole
 * request itself. Such a fleet gets a clear 501 naming the release needed, or with
 * --responses-fallback aggregated the request runs whole on one generation worker.
 */
export function canDisaggregateResponses(pool: WorkerPool): boolean {
  const capable = (role: Role): boolean => pool.ready(role).some((worker) => worker.protocol.accepts.has("responses_disaggregation"));
  return capable("context") && capable("generation");
}

export async function responsesWithoutDisaggregation(
  deps: PipelineDeps,
  ctx: RequestContext,
  input: PipelineInput,
): Promise<PipelineOutcome> {
  if (deps.settings.responsesFallback !== "aggregated") throw responsesUnsupported();
  deps.logger.info("Responses request served aggregated by one generation worker: no ready worker pair can disaggregate /v1/responses", {
    disagg_request_id: ctx.disaggRequestId,
    needs: versionNeededFor("responses_disaggregation"),
  });
  const { disaggregated_params: _clientParams, ...body } = input.body;
  return outcomeOf(await runGenerationLeg(deps, ctx, input, { exclude: undefined, body }), ctx);
}

/** The answer when workers cannot disaggregate a Responses request and no fallback was chosen. */
export function responsesUnsupported(): ProxyError {
  const needed = versionNeededFor("responses_disaggregation");
  return new ProxyError(
    "WORKER_TOO_OLD",
    501,
    `Disaggregated /v1/responses needs TensorRT-LLM ${needed} or newer on both context and generation workers; ` +
      "upgrade the workers, or start the proxy with --responses-fallback aggregated to serve Responses requests on one worker",
  );
}
