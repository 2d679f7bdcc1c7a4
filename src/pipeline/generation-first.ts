import type { Role } from "../config/types.ts";
import { asProxyError, type ProxyError } from "../errors.ts";
import type { JsonObject } from "../json/json.ts";
import type { RequestContext } from "../request/context.ts";
import { contextBody, generationFirstBody, verifyContextAnswer } from "./bodies.ts";
import { bodyOptions } from "./context-first.ts";
import { runContextLeg, runGenerationLeg, withFirstBytes, type GenerationLegResult } from "./legs.ts";
import { outcomeOf } from "./outcome.ts";
import { placeForRequest } from "./placing.ts";
import { outputLengthTimeout, restartable, workerStarting } from "./retry.ts";
import type { PipelineDeps, PipelineInput, PipelineOutcome } from "./types.ts";

/**
 * Both legs at once; the generation worker waits for the KV hand-off keyed by the id. A
 * failed leg cancels its pair, which is drained before the failure is reported; a completed
 * non-streamed generation answer is kept even when the context leg fails after it. One run
 * under `id`; `avoid`: a generation worker a first run failed on (orchestrate.ts restarts).
 *
 * Nothing is settled here, and nothing could be: the context worker pushes the KV to the
 * generation request registered for it (openai_disagg_service.py
 * `_send_disagg_request_gen_first` @ 00bb903d, reference §2.6 step 3), so no pulled hand-off is
 * left to claim (docs/failure-semantics.md, "Hand-off settling").
 */
export async function generationFirst(
  deps: PipelineDeps,
  ctx: RequestContext,
  input: PipelineInput,
  id: bigint,
  avoid: string | undefined,
): Promise<PipelineOutcome> {
  // The generation leg's attempts are sent under the request's engine id.
  ctx.continuesAs(id);
  const contextPlaced = await placeForRequest(deps, ctx, {
    role: "context",
    requestKey: ctx.placementKey,
    exclude: undefined,
    avoid: [],
    routing: input.routing,
    requires: input.api === "responses" ? "responses_disaggregation" : undefined,
    signal: ctx.signal,
  });
  const genBody = generationFirstBody(input, id, contextPlaced.worker.serverInfo);
  const genAbort = new AbortController();
  const ctxAbort = new AbortController();
  // The leg that failed first, and its worker (read as it fails: the aborted pair's failure comes after).
  let firstFailure: { error: ProxyError; leg: Role; worker: string | undefined } | undefined;
  const failed = (error: unknown, leg: Role, sibling: AbortController): never => {
    const failure = asProxyError(error);
    firstFailure ??= { error: failure, leg, worker: ctx.failedWorker };
    sibling.abort(firstFailure.error);
    throw failure;
  };
  const generationStarted = performance.now();
  const gen = runGenerationLeg(deps, ctx, input, {
    exclude: contextPlaced.worker.origin,
    signal: AbortSignal.any([ctx.signal, genAbort.signal]),
    body: genBody,
    avoid: avoid === undefined ? undefined : [avoid],
  }).catch((error: unknown) => failed(error, "generation", ctxAbort));
  const context = runContextLeg(deps, ctx, input, {
    id,
    first: contextPlaced,
    pinned: true,
    signal: AbortSignal.any([ctx.signal, ctxAbort.signal]),
    body: (sentId) => contextBody(input, sentId, "generation_first", bodyOptions(deps)),
  }).catch((error: unknown) => failed(error, "context", genAbort));
  const [genResult, contextResult] = await Promise.allSettled([gen, context]);
  if (genResult.status === "fulfilled" && genResult.value.kind === "json") return outcomeOf(genResult.value);
  if (contextResult.status === "fulfilled") verifyOrCancel(input, contextResult.value.answer, contextResult.value.sentId, genResult);
  if (genResult.status === "rejected" || contextResult.status === "rejected") {
    if (genResult.status === "fulfilled" && genResult.value.kind === "stream") await genResult.value.stream.reader.cancel().catch(() => {});
    const failure = firstFailure?.error ?? asProxyError(genResult.status === "rejected" ? genResult.reason : undefined);
    // The generation leg's own failure restarts the pair; a context failure was retried by its
    // leg already, unless its pinned worker answered that it is starting (out of rotation now).
    // Not a non-streamed generation cut by the request timeout: its answer, as long as the
    // client's max_tokens makes it, would be as long again (as in context-first order).
    const tooLong = !input.stream && outputLengthTimeout("generation", failure);
    const restarts = (firstFailure?.leg === "generation" && !tooLong) || workerStarting(failure);
    throw restarts ? restartable(ctx, failure, firstFailure?.worker, id) : failure;
  }
  return withFirstBytes(deps, ctx, genResult.value, id, generationStarted);
}

function verifyOrCancel(input: PipelineInput, answer: JsonObject, sentId: bigint, gen: PromiseSettledResult<GenerationLegResult>): void {
  try {
    verifyContextAnswer(input.api, answer, sentId);
  } catch (error) {
    if (gen.status === "fulfilled" && gen.value.kind === "stream") void gen.value.stream.reader.cancel().catch(() => {});
    throw error;
  }
}
