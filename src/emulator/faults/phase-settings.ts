/**
 * The effective behaviour of one request in one phase: worker options and faults, overridden
 * field by field by the directives that apply to the phase.
 */

import type { Directives } from "./directives.ts";
import type { ModelPhase } from "../http/model-request.ts";
import type { EmulatorOptions } from "../types.ts";

export interface PhaseSettings {
  /** Zero in the generation phase: the context worker did the prefill. */
  readonly prefillMs: number;
  readonly tokenMs: number;
  /** Content tokens the model would produce if nothing stopped it. */
  readonly naturalTokens: number;
  readonly finishStop: boolean;
  readonly reject: { readonly status: number; readonly afterMs: number } | undefined;
  readonly cutAfterTokens: number | undefined;
  readonly chunkBytes: number | undefined;
  readonly silence: { readonly ms: number; readonly afterTokens: number } | undefined;
  readonly errorEventAfterTokens: number | undefined;
  readonly tools: number;
  readonly reasoning: number;
  readonly cachedTokens: number;
}

const DEFAULT_OUTPUT_TOKENS = 16;

/**
 * `cacheHitTokens`: the prompt's leading tokens found in the worker's KV cache. The prefill is
 * charged only for the other tokens, and usage reports them as cached (a `cached` directive
 * overrides both); a generation phase reports no cache hit of its own.
 */
export function phaseSettings(
  options: EmulatorOptions,
  phase: ModelPhase,
  directives: Directives,
  promptTokens: number,
  cacheHitTokens = 0,
): PhaseSettings {
  const faults = options.faults ?? {};
  const rejectStatus = directives.rejectStatus ?? faults.rejectStatus;
  const silenceMs = directives.silenceMs ?? faults.silenceMs;
  const cachedTokens = Math.min(directives.cached ?? (phase === "generation" ? 0 : cacheHitTokens), promptTokens);
  return {
    prefillMs: phase === "generation" ? 0 : prefillMs(options, directives, promptTokens - cachedTokens),
    tokenMs: directives.tokenMs ?? options.tokenMs ?? 0,
    naturalTokens: directives.tokens ?? options.outputTokens ?? DEFAULT_OUTPUT_TOKENS,
    finishStop: directives.finishStop ?? false,
    reject:
      rejectStatus === undefined ? undefined : { status: rejectStatus, afterMs: directives.rejectAfterMs ?? faults.rejectAfterMs ?? 0 },
    cutAfterTokens: directives.cutAfterTokens ?? faults.cutAfterTokens,
    chunkBytes: directives.chunkBytes ?? faults.chunkBytes,
    silence:
      silenceMs === undefined ? undefined : { ms: silenceMs, afterTokens: directives.silenceAfterTokens ?? faults.silenceAfterTokens ?? 1 },
    errorEventAfterTokens: directives.errorEventAfterTokens ?? faults.errorEventAfterTokens,
    tools: directives.tools ?? 0,
    reasoning: directives.reasoning ?? 0,
    cachedTokens,
  };
}

/** A `prefill_ms` directive replaces the whole prefill latency, per-token part included. */
function prefillMs(options: EmulatorOptions, directives: Directives, uncachedTokens: number): number {
  if (directives.prefillMs !== undefined) return directives.prefillMs;
  return (options.prefillMs ?? 0) + (options.prefillMsPerToken ?? 0) * uncachedTokens;
}
