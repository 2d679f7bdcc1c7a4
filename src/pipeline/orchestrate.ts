import { asProxyError, type ProxyError } from "../errors.ts";
import { isJsonObject, type JsonObject } from "../json.ts";
import type { RequestContext } from "../request/context.ts";
import {
  contextBody,
  generationBody,
  generationFirstBody,
  needsGeneration,
  verifyContextAnswer,
  withoutHandOff,
} from "./bodies.ts";
import { answerAsStream } from "./early-finish.ts";
import { streamOf } from "../streaming/stream-of.ts";
import { runContextLeg, runGenerationLeg } from "./legs.ts";
import type { PipelineDeps, PipelineInput, PipelineOutcome } from "./types.ts";

/**
 * The disaggregated pipeline: context then generation, or both at once in generation-first
 * order. Knows no client dialect; throws ProxyError on failure.
 */
export function runPipeline(deps: PipelineDeps, ctx: RequestContext, input: PipelineInput): Promise<PipelineOutcome> {
  return deps.config.schedule === "generation_first" ? generationFirst(deps, ctx, input) : contextFirst(deps, ctx, input);
}

async function contextFirst(deps: PipelineDeps, ctx: RequestContext, input: PipelineInput): Promise<PipelineOutcome> {
  const leg = await runContextLeg(deps, ctx, input, { body: (id) => contextBody(input, id, "context_first") });
  const continueId = verifyContextAnswer(input.api, leg.answer, leg.sentId);
  if (!needsGeneration(input.api, leg.answer)) return finishedByContext(ctx, input, leg.answer);
  ctx.engineRequestId = continueId;
  const body = generationBody(input, leg.answer, continueId, "context_first");
  return outcomeOf(await runGenerationLeg(deps, ctx, input, { exclude: leg.origin, body }));
}

function finishedByContext(ctx: RequestContext, input: PipelineInput, answer: JsonObject): PipelineOutcome {
  ctx.markFirstToken();
  const final = withoutHandOff(input.api, answer);
  if (!input.stream) return { kind: "json", body: final };
  const options = input.body["stream_options"];
  const includeUsage = isJsonObject(options) && options["include_usage"] === true;
  return { kind: "stream", body: answerAsStream(input.api, final, includeUsage) };
}

/**
 * Both legs at once; the generation worker waits for the KV hand-off keyed by the id. A
 * failed leg cancels its pair, which is drained before the failure is reported; a completed
 * non-streamed generation answer is kept even when the context leg fails after it.
 */
async function generationFirst(deps: PipelineDeps, ctx: RequestContext, input: PipelineInput): Promise<PipelineOutcome> {
  const contextPlaced = deps.placement.place({ role: "context", requestKey: ctx.disaggRequestId, exclude: undefined, avoid: [] });
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
    body: (id) => contextBody(input, id, "generation_first"),
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

function outcomeOf(result: Awaited<ReturnType<typeof runGenerationLeg>>): PipelineOutcome {
  if (result.kind === "json") return { kind: "json", body: result.body };
  return { kind: "stream", body: result.response.body ?? streamOf([]) };
}
