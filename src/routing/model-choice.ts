/**
 * Which workers a request's `model` may go to. A fleet whose workers serve one model (or whose
 * models are unknown) keeps trtllm-serve's behaviour: every request goes to it, whatever its
 * `model` says. A fleet of several models places a request only on the workers serving its
 * model: the name itself when served, else its alias (an exact name first, then the longest
 * `prefix*` pattern); anything else is refused (404 model_not_found, never sent to a worker).
 */

import type { ModelAlias } from "../config/types.ts";
import type { WorkerEntry } from "../workers/worker-pool.ts";

/** The router-state key of a fleet whose model is not known (no worker answered GET /v1/models). */
export const UNKNOWN_MODEL = "";

export type ModelChoice =
  /** A single-model fleet: every worker; `key` keys the routers' state (its one model, or UNKNOWN_MODEL). */
  | { readonly kind: "all"; readonly key: string }
  /** The workers serving `id` (also the routers' state key). */
  | { readonly kind: "model"; readonly key: string }
  /** No worker serves it. */
  | { readonly kind: "unknown"; readonly requested: string | undefined };

/** `served`: every model id the fleet's workers serve, sorted (WorkerPool.servedModels). */
export function chooseModel(requested: string | undefined, served: readonly string[], aliases: readonly ModelAlias[]): ModelChoice {
  if (served.length <= 1) return { kind: "all", key: served[0] ?? UNKNOWN_MODEL };
  if (requested === undefined) return { kind: "unknown", requested };
  if (served.includes(requested)) return { kind: "model", key: requested };
  const target = aliasTarget(requested, aliases);
  return target !== undefined && served.includes(target) ? { kind: "model", key: target } : { kind: "unknown", requested };
}

/** The model an alias maps `name` to: an exact alias first, else the longest matching `prefix*`. */
export function aliasTarget(name: string, aliases: readonly ModelAlias[]): string | undefined {
  let best: ModelAlias | undefined;
  for (const alias of aliases) {
    if (alias.from === name) return alias.to;
    if (
      alias.from.endsWith("*") &&
      name.startsWith(alias.from.slice(0, -1)) &&
      (best === undefined || alias.from.length > best.from.length)
    )
      best = alias;
  }
  return best?.to;
}

/** A client's model name is its own text: a log line or span carries at most this much of it. */
export const MAX_LOGGED_MODEL_CHARS = 256;

/** What a request's log line and span say of its model. */
export interface ModelNames {
  /** The served model the request is placed on; undefined when no worker serves it or the fleet's model is unknown. */
  readonly model: string | undefined;
  /** The client's name, capped, when it is not `model` (an alias, a single-model fleet taking any name, a refused name). */
  readonly requestedModel: string | undefined;
}

export function modelNamesOf(requested: string | undefined, choice: ModelChoice): ModelNames {
  const model = choice.kind === "unknown" || choice.key === UNKNOWN_MODEL ? undefined : choice.key;
  const requestedModel = requested === undefined || requested === model ? undefined : requested.slice(0, MAX_LOGGED_MODEL_CHARS);
  return { model, requestedModel };
}

/** Whether a worker may take a request of this choice. */
export function servesChoice(worker: WorkerEntry, choice: ModelChoice): boolean {
  if (choice.kind === "all") return true;
  return choice.kind === "model" && worker.models !== undefined && worker.models.includes(choice.key);
}

/** The client-facing refusal's wording: names what is served so the fix is obvious. */
export function modelNotFoundMessage(requested: string | undefined, served: readonly string[]): string {
  const listed = served.slice(0, 16).join(", ");
  if (requested === undefined) return `This proxy serves several models (${listed}): the request must name one in \`model\``;
  return `The model \`${requested.slice(0, 256)}\` does not exist: this proxy serves ${listed}`;
}
