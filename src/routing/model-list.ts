/** What the proxy says of its models: GET /v1/models's list and per-model readiness. */

import type { ModelAlias } from "../config/types.ts";
import type { JsonObject } from "../json/json.ts";
import { servesChoice } from "./model-choice.ts";
import type { Placement } from "./placement.ts";

/**
 * GET /v1/models's body, OpenAI's list as trtllm-serve answers it (`owned_by: tensorrt_llm`):
 * every served model, then each exact alias whose model is served (a `prefix*` pattern names
 * no model, so it is not listed). Undefined for a single-model fleet without aliases: a
 * worker answers then, as with trtllm-serve's proxy.
 */
export function modelListOf(placement: Placement, aliases: readonly ModelAlias[], created: number): JsonObject | undefined {
  const served = placement.pool.servedModels();
  if (served.length <= 1 && aliases.length === 0) return undefined;
  const entry = (id: string): JsonObject => ({ id, object: "model", created, owned_by: "tensorrt_llm" });
  const named = aliases.filter((alias) => !alias.from.endsWith("*") && !served.includes(alias.from) && served.includes(alias.to));
  const aliasIds = [...new Set(named.map((alias) => alias.from))];
  return { object: "list", data: [...served.map(entry), ...aliasIds.map(entry)] };
}

/**
 * A ready context and generation worker serve `model` (or what it is an alias of); in a
 * single-model fleet, the pool's own readiness (/health's).
 */
export function modelReadyOf(placement: Placement, model: string): boolean {
  const choice = placement.chooseModel(model);
  if (choice.kind === "unknown") return false;
  if (choice.kind === "all") return placement.pool.isReady();
  const ready = (role: "context" | "generation"): number =>
    placement.pool.ready(role).filter((worker) => servesChoice(worker, choice)).length;
  // Generation-only benchmark mode needs no context worker (its minimal is 0).
  return ready("context") >= Math.min(1, placement.pool.minimal.context) && ready("generation") >= 1;
}
