/**
 * What the worker's prefills cost so far, for benchmarks: per phase that prefills (context_only
 * and aggregated requests), the requests admitted, their prompt tokens and the part of those
 * already in the KV cache (the prefill is charged only for the rest). A rejected request is not
 * counted; an aborted one is (its prefill had started). `GET /emulator/prefill` answers it:
 * `{"context": {"requests", "prompt_tokens", "cached_tokens"}, "aggregated": {…}, "generation": {…}}`;
 * generation_only requests prefill nothing (their KV arrived), so only they are counted there
 * (prompt and cached tokens 0), to show where generation traffic went.
 */

import type { JsonObject } from "../../json/json.ts";
import type { ModelPhase } from "../http/model-request.ts";

export const PREFILL_TALLY_PATH = "/emulator/prefill";

interface PhaseTally {
  requests: number;
  promptTokens: number;
  cachedTokens: number;
}

export class PrefillTally {
  readonly #context: PhaseTally = { requests: 0, promptTokens: 0, cachedTokens: 0 };
  readonly #aggregated: PhaseTally = { requests: 0, promptTokens: 0, cachedTokens: 0 };
  readonly #generation: PhaseTally = { requests: 0, promptTokens: 0, cachedTokens: 0 };

  /** A generation phase prefills nothing (its KV arrived from the context worker): only counted. */
  record(phase: ModelPhase, promptTokens: number, cachedTokens: number): void {
    if (phase === "generation") {
      this.#generation.requests++;
      return;
    }
    const tally = phase === "context" ? this.#context : this.#aggregated;
    tally.requests++;
    tally.promptTokens += promptTokens;
    tally.cachedTokens += cachedTokens;
  }

  toJson(): JsonObject {
    return { context: tallyJson(this.#context), aggregated: tallyJson(this.#aggregated), generation: tallyJson(this.#generation) };
  }
}

function tallyJson(t: PhaseTally): JsonObject {
  return { requests: t.requests, prompt_tokens: t.promptTokens, cached_tokens: t.cachedTokens };
}
