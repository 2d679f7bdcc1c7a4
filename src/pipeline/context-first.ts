import type { JsonObject, JsonValue } from "../json/json.ts";
import { keptListEquals, keptListNumbers, keptListValues, type KeptList } from "../json/json-bytes.ts";
import { withOwnMember, type JsonSource } from "../json/json-source.ts";
import { JSON_CODEC } from "../workers/body-codec.ts";
import type { RequestContext } from "../request/context.ts";
import type { RoutedPlacement } from "../routing/placement.ts";
import { withPromptTokenIds, type RoutingRequest } from "../routing/routing-request.ts";
import {
  contextBody,
  generationBody,
  handOffParams,
  needsGeneration,
  verifyContextAnswer,
  withoutHandOff,
  type BodyOptions,
} from "./bodies.ts";
import { runContextLeg, runGenerationLeg, withFirstBytes, type ContextLegResult, type GenerationLegResult } from "./legs.ts";
import type { JsonAnswer } from "../workers/client.ts";
import { contextWatch, generationWatch, settleReason } from "./handoff/watch.ts";
import type { UnclaimedHandoff } from "./handoff/settler.ts";
import { asProxyError } from "../errors.ts";
import { outcomeOf } from "./outcome.ts";
import { placeForRequest } from "./placing.ts";
import { responsesUnsupported } from "./responses-support.ts";
import { outputLengthTimeout, provesKvPulled, restartable } from "./retry.ts";
import type { PipelineDeps, PipelineInput, PipelineOutcome } from "./types.ts";

/**
 * Context first (reference §2.5): the context worker prefills, then the generation worker
 * continues from its hand-off. With conditional disaggregation (§1.5) a generation worker is
 * reserved first, and a prompt it already holds nearly all of skips the context phase. One
 * run under `id`; `avoid`: a generation worker a first run failed on (orchestrate.ts).
 */
export async function contextFirst(
  deps: PipelineDeps,
  ctx: RequestContext,
  input: PipelineInput,
  id: bigint,
  avoid: string | undefined,
): Promise<PipelineOutcome> {
  const options = bodyOptions(deps);
  // Awaited only with conditional disaggregation: a request without it pays no turn for it.
  const reserved = deps.settings.conditionalDisagg === undefined ? undefined : await reserveGenerationWorker(deps, ctx, input);
  if (reserved !== undefined && !contextNeeded(deps, reserved)) return generationAlone(deps, ctx, input, reserved);
  try {
    const leg = await runContextLeg(deps, ctx, input, {
      id,
      ...(reserved === undefined ? {} : { exclude: reserved.worker.origin }),
      body: (sentId) => contextBody(input, sentId, "context_first", options),
      handoff: contextWatch(deps.handoffs, ctx, (answer, attempt) => leftByAnswer(deps, input, options, answer, attempt)),
    });
    if (input.api === "responses" && handOffParams(input.api, leg.answer) === undefined) {
      // The worker's version claimed Responses disaggregation, yet it answered the request whole.
      return servedWhole(deps, ctx, input, leg.origin, leg.answer, reserved);
    }
    const continueId = verifyContextAnswer(input.api, leg.answer, leg.sentId);
    if (!needsGeneration(input.api, leg.answer)) {
      releaseUnused(deps, input, reserved);
      return finishedByContext(ctx, input, leg.answer);
    }
    ctx.continuesAs(continueId);
    const { body, source } = generationBodyOf(deps, input, leg, continueId, options);
    const routing = withContextTokens(input.routing, leg.answer, leg.keptTokenIds);
    const handoff: UnclaimedHandoff = { api: input.api, body, source, routing, disaggRequestId: continueId, contextWorker: leg.origin };
    const watch = generationWatch(deps.handoffs, ctx, handoff);
    const generation = {
      exclude: leg.origin,
      body,
      routing,
      source,
      handoff: watch,
      avoid: avoid === undefined ? undefined : [avoid],
      ...(reserved === undefined ? {} : { first: reserved }),
    };
    const generationStarted = performance.now();
    let result: GenerationLegResult;
    try {
      result = await runGenerationLeg(deps, ctx, input, generation);
    } catch (error) {
      // No generation request can have reached a worker: the context worker still holds the KV.
      if (!watch.reached) deps.handoffs?.settle(handoff, settleReason(ctx, error));
      // One reached a worker that may have failed before it pulled (while the request runs on: an
      // attempt its end left in flight is the watch's). Claimed elsewhere than where it failed.
      else if (!ctx.signal.aborted && !provesKvPulled(asProxyError(error)))
        deps.handoffs?.settle(handoff, "generation_failed", ctx.failedWorker === undefined ? [] : [ctx.failedWorker]);
      // A non-streamed answer longer than the request timeout would be as long again: not run twice.
      if (!input.stream && outputLengthTimeout("generation", asProxyError(error))) throw error;
      throw restartable(ctx, error, ctx.failedWorker, continueId);
    }
    return await withFirstBytes(deps, ctx, result, continueId, generationStarted);
  } catch (error) {
    releaseUnused(deps, input, reserved);
    throw error;
  }
}

/**
 * The generation body, and the source it is written from. Token ids the context answer kept
 * as their bytes go to the generation worker as those bytes (JSON) unless they are the
 * client's own ids (a completions prompt given as ids), which go as the client's; a codec that
 * cannot send bytes, or a body with no client bytes, gets them parsed.
 */
function generationBodyOf(
  deps: PipelineDeps,
  input: PipelineInput,
  leg: ContextLegResult,
  continueId: bigint,
  options: BodyOptions,
): { body: JsonObject; source: JsonSource | undefined } {
  const kept = leg.keptTokenIds;
  const bytesFit = (deps.bodyCodec ?? JSON_CODEC) === JSON_CODEC && input.source !== undefined;
  if (kept === undefined || !bytesFit) {
    const answer = kept === undefined ? leg.answer : { ...leg.answer, prompt_token_ids: keptListValues(kept) };
    return { body: generationBody(input, answer, continueId, "context_first", options), source: input.source };
  }
  // The answer reads null where its ids were: the body keeps the client's field until it is set here.
  const body = generationBody(input, leg.answer, continueId, "context_first", options);
  const field = input.api === "completions" ? "prompt" : "prompt_token_ids";
  if (body["prompt_token_ids_b64"] !== undefined || input.source === undefined || keptListEquals(kept, body[field]))
    return { body, source: input.source };
  const own = withOwnMember(input.source, field, kept.bytes);
  body[field] = own.value;
  return { body, source: own.source };
}

/** The hand-off a context answer leaves for a generation request, if it leaves one. */
function leftByAnswer(
  deps: PipelineDeps,
  input: PipelineInput,
  options: BodyOptions,
  answer: JsonAnswer,
  attempt: { origin: string; id: bigint },
): UnclaimedHandoff | undefined {
  if (handOffParams(input.api, answer.body) === undefined || !needsGeneration(input.api, answer.body)) return undefined;
  let continueId: bigint;
  try {
    continueId = verifyContextAnswer(input.api, answer.body, attempt.id);
  } catch {
    return undefined;
  }
  const leg: ContextLegResult = { answer: answer.body, origin: attempt.origin, sentId: attempt.id, keptTokenIds: answer.keptTokenIds };
  const { body, source } = generationBodyOf(deps, input, leg, continueId, options);
  const routing = withContextTokens(input.routing, answer.body, answer.keptTokenIds);
  return { api: input.api, body, source, routing, disaggRequestId: continueId, contextWorker: attempt.origin };
}

export function bodyOptions(deps: PipelineDeps): BodyOptions {
  return { tokenIdsAsBytes: deps.settings.genTokidsCtxbytes, stripMessageHistory: deps.settings.genStripMessageHistory };
}

async function reserveGenerationWorker(deps: PipelineDeps, ctx: RequestContext, input: PipelineInput): Promise<RoutedPlacement> {
  const placed = await placeForRequest(deps, ctx, {
    role: "generation",
    requestKey: ctx.placementKey,
    exclude: undefined,
    avoid: [],
    routing: input.routing,
    // Reserved before it is known whether the request will be disaggregated: a Responses one may be.
    requires: input.api === "responses" ? "responses_disaggregation" : undefined,
    signal: ctx.signal,
  });
  ctx.hold(placed.reservation);
  return placed;
}

function contextNeeded(deps: PipelineDeps, reserved: RoutedPlacement): boolean {
  const limit = deps.settings.conditionalDisagg?.maxLocalPrefillLength ?? 0;
  return reserved.matchedTokens === 0 || reserved.totalTokens - reserved.matchedTokens > limit;
}

/** The generation worker holds nearly all of the prompt: it serves the request alone, as an ordinary one. */
async function generationAlone(
  deps: PipelineDeps,
  ctx: RequestContext,
  input: PipelineInput,
  reserved: RoutedPlacement,
): Promise<PipelineOutcome> {
  const { disaggregated_params: _clientParams, ...body } = input.body;
  deps.logger.debug("context phase skipped", {
    disagg_request_id: ctx.disaggRequestId,
    matched: reserved.matchedTokens,
    total: reserved.totalTokens,
  });
  return outcomeOf(await runGenerationLeg(deps, ctx, input, { exclude: undefined, body, first: reserved }), ctx);
}

/**
 * A context worker answered a Responses request without a hand-off: it cannot disaggregate it
 * (whatever its version said), so it is not asked again; its whole answer is the fallback's
 * answer when one was chosen, else the client gets the 501.
 */
function servedWhole(
  deps: PipelineDeps,
  ctx: RequestContext,
  input: PipelineInput,
  origin: string,
  answer: JsonObject,
  reserved: RoutedPlacement | undefined,
): PipelineOutcome {
  releaseUnused(deps, input, reserved);
  for (const entry of deps.placement.pool.entriesOf(origin)) entry.protocol.accepts.delete("responses_disaggregation");
  const version = deps.placement.pool.entriesOf(origin)[0]?.protocol.version ?? "unknown";
  deps.logger.warn("context worker answered /v1/responses without a hand-off; it is no longer sent disaggregated Responses requests", {
    worker: origin,
    version,
    fallback: deps.settings.responsesFallback,
  });
  if (deps.settings.responsesFallback !== "aggregated") throw responsesUnsupported();
  return finishedByContext(ctx, input, answer);
}

/** A generation worker reserved for a request that will not reach it: released now, exactly once. */
function releaseUnused(deps: PipelineDeps, input: PipelineInput, reserved: RoutedPlacement | undefined): void {
  if (reserved === undefined) return;
  reserved.reservation.release();
  void deps.placement.finished("generation", reserved.worker.origin, input.routing, false);
}

function withContextTokens(routing: RoutingRequest, answer: JsonObject, kept: KeptList | undefined): RoutingRequest {
  if (kept !== undefined) return withPromptTokenIds(routing, () => keptListNumbers(kept), kept.count);
  const tokens = answer["prompt_token_ids"];
  // Checked in place, never copied: a long prompt's ids are the largest part of the answer.
  return isNumberList(tokens) ? withPromptTokenIds(routing, tokens) : routing;
}

function isNumberList(value: JsonValue | undefined): value is number[] {
  return Array.isArray(value) && value.every((item) => typeof item === "number");
}

function finishedByContext(ctx: RequestContext, input: PipelineInput, answer: JsonObject): PipelineOutcome {
  ctx.markFirstToken();
  const final = withoutHandOff(input.api, answer);
  return input.stream ? { kind: "finished", body: final } : { kind: "json", body: final };
}
