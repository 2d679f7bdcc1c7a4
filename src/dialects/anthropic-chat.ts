/**
 * The parts of OpenAI chat answers (whole and streamed) the Anthropic conversion reads, and
 * the usage and stop-reason mappings both directions share (reference §3.5.2).
 */
import * as v from "valibot";
import type { JsonObject } from "../json/json.ts";

const maybeString = v.nullish(v.string());
const maybeCount = v.nullish(v.number());

const ChatUsage = v.looseObject({
  prompt_tokens: maybeCount,
  completion_tokens: maybeCount,
  prompt_tokens_details: v.nullish(v.looseObject({ cached_tokens: maybeCount })),
});
export type ChatUsage = v.InferOutput<typeof ChatUsage>;

/** `stop_reason` is the matched stop string, or a stop token id. */
const stopFields = { finish_reason: maybeString, stop_reason: v.nullish(v.union([v.string(), v.number()])) };

const ToolCall = v.looseObject({
  id: maybeString,
  function: v.looseObject({ name: v.string(), arguments: maybeString }),
});

export const ChatCompletion = v.looseObject({
  model: maybeString,
  choices: v.nullish(
    v.array(
      v.looseObject({
        message: v.looseObject({
          content: maybeString,
          reasoning_content: maybeString,
          reasoning: maybeString,
          tool_calls: v.nullish(v.array(ToolCall)),
        }),
        ...stopFields,
      }),
    ),
  ),
  usage: v.nullish(ChatUsage),
});

const ToolCallDelta = v.looseObject({
  index: v.nullish(v.number()),
  id: maybeString,
  function: v.nullish(v.looseObject({ name: maybeString, arguments: maybeString })),
});
export type ToolCallDelta = v.InferOutput<typeof ToolCallDelta>;

export const ChatChunk = v.looseObject({
  model: maybeString,
  choices: v.nullish(
    v.array(
      v.looseObject({
        delta: v.nullish(
          v.looseObject({
            content: maybeString,
            reasoning_content: maybeString,
            reasoning: maybeString,
            tool_calls: v.nullish(v.array(ToolCallDelta)),
          }),
        ),
        ...stopFields,
      }),
    ),
  ),
  usage: v.nullish(ChatUsage),
});
export type ChatChunk = v.InferOutput<typeof ChatChunk>;

export type StopReason = "end_turn" | "max_tokens" | "stop_sequence" | "tool_use";

export interface StopResult {
  readonly stopReason: StopReason;
  readonly stopSequence: string | undefined;
}

const STOP_REASONS: Readonly<Record<string, StopReason>> = {
  stop: "end_turn",
  length: "max_tokens",
  tool_calls: "tool_use",
};

/** A string stop_reason on a `stop` finish names the stop sequence that matched. */
export function mapStop(finishReason: string | null | undefined, stopReason: string | number | null | undefined): StopResult {
  if (finishReason === "stop" && typeof stopReason === "string") {
    return { stopReason: "stop_sequence", stopSequence: stopReason };
  }
  return { stopReason: (finishReason && STOP_REASONS[finishReason]) || "end_turn", stopSequence: undefined };
}

/**
 * A turn that produced tool_use blocks must say so, or the client never runs the tools; a
 * truncated turn still reports max_tokens.
 */
export function withToolUse(stop: StopResult, emittedToolUse: boolean): StopResult {
  if (!emittedToolUse || stop.stopReason === "max_tokens") return stop;
  return { stopReason: "tool_use", stopSequence: undefined };
}

/** Anthropic counts cached prompt tokens apart from `input_tokens`. */
export function convertUsage(usage: ChatUsage | null | undefined): JsonObject {
  const prompt = usage?.prompt_tokens ?? 0;
  const cached = usage?.prompt_tokens_details?.cached_tokens ?? 0;
  const converted: JsonObject = {
    input_tokens: Math.max(prompt - cached, 0),
    output_tokens: usage?.completion_tokens ?? 0,
  };
  if (cached > 0) converted["cache_read_input_tokens"] = cached;
  return converted;
}

/** A stop result as the fields of a message or a message_delta (absent, never null). */
export function stopFieldsOf(stop: StopResult): JsonObject {
  const fields: JsonObject = { stop_reason: stop.stopReason };
  if (stop.stopSequence !== undefined) fields["stop_sequence"] = stop.stopSequence;
  return fields;
}
