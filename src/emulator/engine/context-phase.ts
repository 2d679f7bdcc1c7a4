/**
 * A context_only request: prefill, produce the first token, answer the API's non-streamed JSON
 * plus the hand-off the proxy carries to the generation worker. In generation-first order the
 * hand-off is also published to the generation worker's long poll.
 */

import { readInteger } from "../../json/json.ts";
import { withContextExtras, type ContextHandover } from "./disagg-params.ts";
import { contextPlan, tokenIdOf } from "./output-plan.ts";
import { prepareJob, type PreparedJob } from "./prepare-job.ts";
import { collectOutput, engineRun, jsonReply } from "../render/reply.ts";
import type { Job } from "../worker-context.ts";
import { WorkerError } from "../http/worker-error.ts";

export async function serveContextPhase(job: Job): Promise<Response> {
  const handoffKey = generationFirstKey(job);
  if (handoffKey !== undefined) job.worker.handoffs.expect(handoffKey);
  // A failed or aborted context phase tells the generation worker nothing, as on a real
  // engine: it waits out its KV transfer timeout unless the proxy cancels it.
  {
    const prepared = await prepareJob(job);
    const plan = contextPlan(prepared.plan);
    const output = await collectOutput(prepared, engineRun(prepared, plan.tokens));
    if (output.errorMessage !== undefined) throw new WorkerError(500, output.errorMessage);
    const handover = handoverOf(prepared);
    const answer = withContextExtras(job.request, prepared.renderers.json(output.tokens, plan.finishReason), handover, plan.finishReason);
    if (handoffKey !== undefined && output.cut === undefined) {
      job.worker.handoffs.complete(handoffKey, {
        firstGenTokens: [handover.firstTokenId],
        promptTokenIds: handover.promptTokenIds,
      });
    } else if (handoffKey === undefined && plan.finishReason === "length") {
      // Generation continues elsewhere: the KV stays here until a generation request pulls it.
      const blocks = Math.ceil(prepared.promptTokenIds.length / (job.worker.options.tokensPerBlock ?? 32));
      job.worker.heldKv.hold(handover.engineRequestId.toString(), blocks);
    }
    return jsonReply(prepared, answer, output.cut);
  }
}

/** Only generation-first requests are long-polled; context-first ones travel through the proxy. */
function generationFirstKey(job: Job): string | undefined {
  const { request } = job;
  if (readInteger(request.disagg?.["schedule_style"]) !== 1n) return undefined;
  return request.disaggRequestId?.toString();
}

function handoverOf(prepared: PreparedJob): ContextHandover {
  const first = prepared.plan.tokens[0];
  if (first === undefined) throw new RangeError("Cannot hand over a context phase that planned no token");
  return {
    workerUrl: prepared.job.worker.url,
    firstTokenId: tokenIdOf(first),
    promptTokenIds: prepared.promptTokenIds,
    engineRequestId: prepared.job.engineRequestId,
    directives: prepared.directives.text,
  };
}
