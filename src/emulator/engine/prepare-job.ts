/**
 * Everything a model request needs decided before the engine runs: its directives, prompt
 * tokens, KV cache hit, phase settings and output plan, and the renderers of its API. A reject
 * fault strikes here, after its delay.
 */

import { chatRenderers } from "../render/chat-render.ts";
import { completionsRenderers } from "../render/completions-render.ts";
import { parseDirectives, type PhaseDirectives } from "../faults/directives.ts";
import type { ApiKind } from "../http/model-request.ts";
import { planOutput, toolNamesOf, type OutputPlan } from "./output-plan.ts";
import { phaseSettings, type PhaseSettings } from "../faults/phase-settings.ts";
import type { ApiRenderers, RenderContext } from "../render/render-common.ts";
import { replyIds } from "../render/reply-ids.ts";
import { responsesRenderers } from "../render/responses-render.ts";
import { pause } from "../../timers.ts";
import { tokenize } from "./tokenizer.ts";
import type { Job } from "../worker-context.ts";
import { contextLengthExceeded, WorkerError } from "../http/worker-error.ts";

export interface PreparedJob {
  readonly job: Job;
  readonly directives: PhaseDirectives;
  readonly promptTokenIds: readonly number[];
  readonly settings: PhaseSettings;
  /** The whole answer as the model would give it; the context phase takes its first token. */
  readonly plan: OutputPlan;
  readonly renderers: ApiRenderers;
}

export interface PrepareInputs {
  /** Directive blocks carried over from the context phase (inside encoded_opaque_state). */
  readonly inheritedDirectives: string | undefined;
  /** Usage counts the context phase reported (ctx_usage), which the generation phase repeats. */
  readonly contextUsage: { readonly prompt: number; readonly cached: number } | undefined;
}

const NOTHING_INHERITED: PrepareInputs = { inheritedDirectives: undefined, contextUsage: undefined };

export async function prepareJob(job: Job, inputs: PrepareInputs = NOTHING_INHERITED): Promise<PreparedJob> {
  const { request, worker } = job;
  const directives = readDirectives(`${inputs.inheritedDirectives ?? ""} ${request.promptText}`);
  const promptTokenIds = request.givenTokenIds ?? tokenize(request.promptText, worker.options.bytesPerToken);
  const maxSeqLen = worker.options.maxSeqLen;
  // The worker checks a prompt's length before it schedules it; a generation-only request's
  // prompt was checked by its context phase.
  if (maxSeqLen !== undefined && request.phase !== "generation" && promptTokenIds.length > maxSeqLen) {
    throw contextLengthExceeded(maxSeqLen, promptTokenIds.length);
  }
  const phaseDirectives = request.phase === "context" ? directives.context : directives.generation;
  const cache = worker.kvCache.lookup(promptTokenIds);
  const settings = phaseSettings(worker.options, request.phase, phaseDirectives, promptTokenIds.length, cache.cachedTokens);
  if (settings.reject !== undefined) {
    await pause(settings.reject.afterMs, job.signal);
    throw new WorkerError(settings.reject.status, `Emulated rejection with status ${settings.reject.status}`);
  }
  // Queued for the engine: a request aborted now never ran (nor, in generation, pulled its KV).
  await pause(phaseDirectives.queueMs ?? 0, job.signal);
  // Every admitted phase leaves the prompt's KV in this worker's cache (a generation worker's
  // arrived by transfer).
  worker.kvCache.store(cache);
  worker.prefill.record(request.phase, promptTokenIds.length, settings.cachedTokens);
  const plan = planOutput(settings, {
    maxTokens: request.maxTokens,
    chatExtras: request.api === "chat",
    toolNames: toolNamesOf(request.body["tools"]),
  });
  const render: RenderContext = {
    request,
    ids: replyIds(request.api, request.requestId),
    model: worker.model,
    promptTokens: inputs.contextUsage?.prompt ?? promptTokenIds.length,
    cachedTokens: inputs.contextUsage?.cached ?? settings.cachedTokens,
  };
  return { job, directives, promptTokenIds, settings, plan, renderers: renderersFor(render) };
}

function readDirectives(text: string): PhaseDirectives {
  try {
    return parseDirectives(text);
  } catch (error) {
    if (error instanceof SyntaxError) throw new WorkerError(400, error.message);
    throw error;
  }
}

const RENDERERS: Readonly<Record<ApiKind, (context: RenderContext) => ApiRenderers>> = {
  chat: chatRenderers,
  completions: completionsRenderers,
  responses: responsesRenderers,
};

function renderersFor(context: RenderContext): ApiRenderers {
  return RENDERERS[context.request.api](context);
}
