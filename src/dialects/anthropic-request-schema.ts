/**
 * Valibot schemas for the Anthropic Messages request (reference §3.5.1). Objects are loose:
 * clients attach evolving fields (cache_control, defer_loading, metadata, betas, display …)
 * that have no chat equivalent and must pass validation so the converter can drop them.
 */
import * as v from "valibot";
import { badRequest } from "../errors.ts";
import { isJsonObject, type JsonObject } from "../json/json.ts";

const jsonObject = v.custom<JsonObject>(isJsonObject, "Invalid type: Expected object");
const maybeString = v.nullish(v.string());
const unitInterval = v.nullish(v.pipe(v.number(), v.minValue(0), v.maxValue(1)));

/** Any content block, checked only for its type: the converter validates it by type later. */
export const RawBlock = v.looseObject({ type: v.string() });
export type RawBlock = v.InferOutput<typeof RawBlock>;

const TextBlock = v.looseObject({ type: v.literal("text"), text: v.string() });

const ImageBlock = v.looseObject({
  type: v.literal("image"),
  source: v.looseObject({
    type: v.picklist(["base64", "url"]),
    media_type: maybeString,
    data: maybeString,
    url: maybeString,
  }),
});

const ToolUseBlock = v.looseObject({
  type: v.literal("tool_use"),
  id: maybeString,
  name: v.string(),
  input: v.nullish(jsonObject),
});

const ToolResultBlock = v.looseObject({
  type: v.literal("tool_result"),
  tool_use_id: v.string(),
  content: v.nullish(v.union([v.string(), v.array(RawBlock)])),
  is_error: v.nullish(v.boolean()),
});

const ThinkingBlock = v.looseObject({ type: v.literal("thinking"), thinking: v.string() });
const RedactedThinkingBlock = v.looseObject({ type: v.literal("redacted_thinking") });

export const KnownBlock = v.variant("type", [TextBlock, ImageBlock, ToolUseBlock, ToolResultBlock, ThinkingBlock, RedactedThinkingBlock]);
export type KnownBlock = v.InferOutput<typeof KnownBlock>;
export type ImageBlock = v.InferOutput<typeof ImageBlock>;
export const KNOWN_BLOCK_TYPES: ReadonlySet<string> = new Set(KnownBlock.options.map((o) => o.entries.type.literal));

const Message = v.looseObject({
  role: v.picklist(["user", "assistant", "system"]),
  content: v.union([v.string(), v.array(RawBlock)]),
});
export type AnthropicMessage = v.InferOutput<typeof Message>;

const Tool = v.looseObject({
  name: v.string(),
  type: maybeString,
  description: maybeString,
  input_schema: v.nullish(jsonObject),
  strict: v.nullish(v.boolean()),
});
export type AnthropicTool = v.InferOutput<typeof Tool>;

const ToolChoice = v.looseObject({
  type: v.picklist(["auto", "any", "tool", "none"]),
  name: maybeString,
  disable_parallel_tool_use: v.nullish(v.boolean()),
});
export type AnthropicToolChoice = v.InferOutput<typeof ToolChoice>;

// A budget on a variant that takes none is refused: accepting it would let the client believe
// it set a budget that is ignored. Other extra fields (e.g. `display`) are accepted and dropped.
const noBudget = v.optional(v.never("thinking.budget_tokens is only valid with thinking type 'enabled'"));
const Thinking = v.variant("type", [
  v.looseObject({
    type: v.literal("enabled"),
    budget_tokens: v.pipe(v.number(), v.integer(), v.minValue(1024, "thinking.budget_tokens must be at least 1024")),
  }),
  v.looseObject({ type: v.literal("adaptive"), budget_tokens: noBudget }),
  v.looseObject({ type: v.literal("disabled"), budget_tokens: noBudget }),
]);

/** Fields shared by Messages and count_tokens: everything that changes the rendered prompt. */
const promptEntries = {
  model: v.string(),
  messages: v.pipe(v.array(Message), v.minLength(1, "messages must not be empty")),
  system: v.nullish(v.union([v.string(), v.array(TextBlock)])),
  tools: v.nullish(v.array(Tool)),
  tool_choice: v.nullish(ToolChoice),
  thinking: v.nullish(Thinking),
  output_config: v.nullish(jsonObject),
  context_management: v.nullish(jsonObject),
};

export const MessagesRequest = v.looseObject({
  ...promptEntries,
  max_tokens: v.pipe(v.number(), v.integer(), v.minValue(1, "max_tokens must be at least 1")),
  temperature: unitInterval,
  top_p: unitInterval,
  top_k: v.nullish(v.pipe(v.number(), v.integer(), v.minValue(0))),
  stop_sequences: v.nullish(v.array(v.string())),
  stream: v.nullish(v.boolean()),
});
export type MessagesRequest = v.InferOutput<typeof MessagesRequest>;

export const CountTokensRequest = v.looseObject(promptEntries);

type AnyIssue = v.BaseIssue<unknown>;

interface Located {
  readonly issue: AnyIssue;
  readonly keys: readonly unknown[];
}

const keysOf = (issue: AnyIssue): unknown[] => (issue.path ?? []).map((item) => item.key);

// A union reports only "Expected (string | Array)"; the member issue that got furthest into
// the input names the field that is actually wrong. Member paths are relative to the union.
function deepestIssue(issue: AnyIssue, outer: readonly unknown[]): Located {
  const keys = [...outer, ...keysOf(issue)];
  let best: Located = { issue, keys };
  for (const inner of issue.issues ?? []) {
    const candidate = deepestIssue(inner, keys);
    if (candidate.keys.length > best.keys.length) best = candidate;
  }
  return best;
}

function describeIssue(issue: AnyIssue, prefix: string): string {
  const { issue: deepest, keys } = deepestIssue(issue, prefix === "" ? [] : [prefix]);
  const text = deepest.received === "undefined" ? "Field required" : deepest.message;
  return keys.length === 0 ? text : `${keys.map(String).join(".")}: ${text}`;
}

/** Validates `input`; throws the 400 that names the first offending field. */
export function validate<const S extends v.GenericSchema>(schema: S, input: unknown, prefix = ""): v.InferOutput<S> {
  const result = v.safeParse(schema, input);
  if (result.success) return result.output;
  const [first] = result.issues;
  throw badRequest(first === undefined ? "Invalid request body" : describeIssue(first, prefix));
}
