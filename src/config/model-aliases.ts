/**
 * model_aliases (YAML) and --model-alias from=to: client model names mapped to served ones.
 * `from` is an exact name, or a prefix ending in `*` (`claude-*`); `to` is a served model id.
 */

import { invalidConfig } from "./errors.ts";
import { isMapping } from "./yaml-values.ts";

export interface ModelAlias {
  /** An exact client model name, or a prefix pattern ending in `*`. */
  readonly from: string;
  /** The served model id requests under `from` go to. */
  readonly to: string;
}

/** Aliases bounded so a config cannot make every request scan a huge list. */
export const MAX_MODEL_ALIASES = 1024;

/** One `from=to` of --model-alias. */
export function modelAliasOf(text: string, where = "--model-alias"): ModelAlias {
  const at = text.indexOf("=");
  if (at < 0) throw invalidConfig(where, `from=to (e.g. claude-*=llama-3-70b), not ${JSON.stringify(text)}`);
  return checkedAlias(text.slice(0, at).trim(), text.slice(at + 1).trim(), where);
}

/** YAML model_aliases: a mapping of client name (or `prefix*`) to served model id. */
export function modelAliasesOf(value: unknown): ModelAlias[] | undefined {
  if (value === undefined || value === null) return undefined;
  if (!isMapping(value)) throw invalidConfig("model_aliases", "a mapping of client model name (or prefix*) to served model id");
  return Object.entries(value).map(([from, to]) => {
    if (typeof to !== "string") throw invalidConfig(`model_aliases.${from}`, "a served model id (a string)");
    return checkedAlias(from.trim(), to.trim(), `model_aliases.${from}`);
  });
}

/** Flags first, so a flag's alias wins over the YAML's for the same name; bounded. */
export function mergedAliases(fromFlags: readonly ModelAlias[], fromYaml: readonly ModelAlias[]): readonly ModelAlias[] {
  const merged = [...fromFlags, ...fromYaml];
  if (merged.length > MAX_MODEL_ALIASES) throw invalidConfig("model_aliases", `at most ${MAX_MODEL_ALIASES} aliases`);
  return Object.freeze(merged.map((alias) => Object.freeze(alias)));
}

function checkedAlias(from: string, to: string, where: string): ModelAlias {
  if (from === "" || from === "*") throw invalidConfig(where, "a non-empty client model name or prefix* pattern");
  if (from.indexOf("*") !== -1 && from.indexOf("*") !== from.length - 1)
    throw invalidConfig(where, "a name with `*` only at its end (a prefix pattern)");
  if (to === "" || to.includes("*")) throw invalidConfig(where, "mapped to a served model id (no `*`)");
  return { from, to };
}
