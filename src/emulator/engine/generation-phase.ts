/**
 * generation_only and aggregated requests: generate the answer, streamed or not. A generation
 * request is first checked against what its context phase handed over; in generation-first
 * order it waits for the KV hand-off from the context worker before its first token.
 */

import { checkGenerationRequest, contextUsage } from "./disagg-params.ts";
import { claimHeldKv } from "../kv/kv-claim.ts";
import { fetchKvHandoff } from "../kv/kv-fetch.ts";
import { prepareJob, type PreparedJob } from "./prepare-job.ts";
import { collectOutput, engineRun, jsonReply, streamReply } from "../render/reply.ts";
import type { Job } from "../worker-context.ts";
import { WorkerError } from "../http/worker-error.ts";

const DEFAULT_KV_WAIT_MS = 60_000;
const DEFAULT_RESPONSES_KEEPALIVE_MS = 15_000;

export async function serveAggregated(job: Job): Promise<Response> {
  return answer(await prepareJob(job));
}

export async function serveGenerationPhase(job: Job): Promise<Response> {
  const source = checkGenerationRequest(job.request);
  // The KV cache comes over from the context worker: directly (context first) or once the
  // context phase finished (generation first).
  job.perf.kvTransferStarted();
  const prepared = await prepareJob(job, {
    inheritedDirectives: source.style === "context_first" ? source.state.directives : undefined,
    contextUsage: contextUsage(job.request),
  });
  if (source.style === "generation_first") {
    const timeoutMs = job.worker.options.kvWaitTimeoutMs ?? DEFAULT_KV_WAIT_MS;
    await fetchKvHandoff(source.endpoint, source.disaggRequestId, timeoutMs, job.signal);
  } else if (source.style === "context_first") {
    await claimHeldKv(source.state.worker, source.ctxRequestId, job.signal);
  }
  job.perf.kvTransferEnded();
  return answer(prepared);
}

async function answer(prepared: PreparedJob): Promise<Response> {
  const { request, worker } = prepared.job;
  const { plan } = prepared;
  if (request.stream) {
    // Only Responses streams have a keepalive of the worker's own: response.in_progress again.
    const keepaliveMs = request.api === "responses" ? (worker.options.responsesKeepaliveMs ?? DEFAULT_RESPONSES_KEEPALIVE_MS) : undefined;
    return streamReply(prepared, prepared.renderers.stream(plan), engineRun(prepared, plan.tokens, keepaliveMs));
  }
  const output = await collectOutput(prepared, engineRun(prepared, plan.tokens));
  if (output.errorMessage !== undefined) throw new WorkerError(500, output.errorMessage);
  return jsonReply(prepared, prepared.renderers.json(output.tokens, plan.finishReason), output.cut);
}
