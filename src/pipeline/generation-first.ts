import { asProxyError, type ProxyError } from "../errors.ts";
import type { JsonObject } from "../json.ts";
import type { RequestContext } from "../request/context.ts";
import { contextBody, generationFirstBody, verifyContextAnswer } from "./bodies.ts";
import { bodyOptions } from "./context-first.ts";
import { runContextLeg, runGenerationLeg } from "./legs.ts";
import { outcomeOf } from "./outcome.ts";
import type { PipelineDeps, PipelineInput, PipelineOutcome } from "./types.ts";

/**
 * Both legs at once; the generation worker waits for the KV hand-off keyed by the id. A
 * failed leg cancels its pair, which is drained before the failure is reported; a completed
 * non-streamed generation answer is kept even when the context leg fails after it.
 */
export async function generationFirst(deps: PipelineDeps, ctx: RequestContext, input: PipelineInput): Promise<PipelineOutcome> {
  const contextPlaced = deps.placement.place({
    role: "context",
    requestKey: ctx.disaggRequestId,
    exclude: undefined,
    avoid: [],
    routing: input.routing,
    requires: input.api === "responses" ? "responses_disaggregation" : undefined,
  });
  const genBody = generationFirstBody(input, ctx.disaggRequestId, contextPlaced.worker.serverInfo);
  const genAbort = new AbortController();
  const ctxAbort = new AbortController();
  let firstFailure: ProxyError | undefined;
  const failed = (error: unknown, sibling: AbortController): never => {
    const failure = asProxyError(error);
    firstFailure ??= failure;
    sibling.abort(firstFailure);
    throw failure;
  };
  const gen = runGenerationLeg(deps, ctx, input, {
    exclude: contextPlaced.worker.origin,
    signal: AbortSignal.any([ctx.signal, genAbort.signal]),
    body: genBody,
  }).catch((error: unknown) => failed(error, ctxAbort));
  const context = runContextLeg(deps, ctx, input, {
    first: contextPlaced,
    pinned: true,
    signal: AbortSignal.any([ctx.signal, ctxAbort.signal]),
    body: (id) => contextBody(input, id, "generation_first", bodyOptions(deps)),
  }).catch((error: unknown) => failed(error, genAbort));
  const [genResult, contextResult] = await Promise.allSettled([gen, context]);
  if (genResult.status === "fulfilled" && genResult.value.kind === "json") return outcomeOf(genResult.value);
  if (contextResult.status === "fulfilled") verifyOrCancel(input, contextResult.value.answer, contextResult.value.sentId, genResult);
  if (genResult.status === "rejected" || contextResult.status === "rejected") {
    if (genResult.status === "fulfilled" && genResult.value.kind === "stream") await cancelBody(genResult.value.response);
    throw firstFailure ?? asProxyError(genResult.status === "rejected" ? genResult.reason : undefined);
  }
  return outcomeOf(genResult.value);
}

function verifyOrCancel(
  input: PipelineInput,
  answer: JsonObject,
  sentId: bigint,
  gen: PromiseSettledResult<Awaited<ReturnType<typeof runGenerationLeg>>>,
): void {
  try {
    verifyContextAnswer(input.api, answer, sentId);
  } catch (error) {
    if (gen.status === "fulfilled" && gen.value.kind === "stream") void cancelBody(gen.value.response);
    throw error;
  }
}

async function cancelBody(response: Response): Promise<void> {
  await response.body?.cancel().catch(() => {});
}

