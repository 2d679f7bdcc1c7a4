/**
 * What the emulated model outputs, token by token, before any timing or rendering.
 *
 * Content token i (from 1) is the word "tok<i>", reasoning token i is "think<i>"; each is sent
 * with a leading space. Tool call k is named after the request's k-th tool (cyclically), else
 * "tool_<k>", with arguments `{"location": "city<k>", "index": <k>}`: one token for its header,
 * then four argument fragments. Several calls interleave: all headers, then fragment 1 of every
 * call, then fragment 2 of every call, and so on.
 */

import { isJsonObject, type JsonValue } from "../../json/json.ts";
import { randomHex } from "../render/reply-ids.ts";
import type { PhaseSettings } from "../faults/phase-settings.ts";
import { tokenId } from "./tokenizer.ts";

export type OutputToken =
  | { readonly kind: "reasoning"; readonly text: string }
  | { readonly kind: "content"; readonly text: string }
  | { readonly kind: "tool-start"; readonly call: number; readonly callId: string; readonly name: string }
  | { readonly kind: "tool-args"; readonly call: number; readonly text: string };

export type FinishReason = "stop" | "length" | "tool_calls";

export interface OutputPlan {
  readonly tokens: readonly OutputToken[];
  readonly finishReason: FinishReason;
}

export interface PlanShape {
  readonly maxTokens: number | undefined;
  /** Tool calls and reasoning are chat features (the Anthropic route rides on chat). */
  readonly chatExtras: boolean;
  readonly toolNames: readonly string[];
}

export function planOutput(settings: PhaseSettings, shape: PlanShape): OutputPlan {
  const reasoning = shape.chatExtras ? words("think", settings.reasoning, "reasoning") : [];
  const tools = shape.chatExtras && settings.tools > 0;
  const answer = tools ? toolCallTokens(settings.tools, shape.toolNames) : words("tok", settings.naturalTokens, "content");
  const natural = [...reasoning, ...answer];
  if (settings.finishStop) return { tokens: natural.slice(0, 1), finishReason: "stop" };
  if (shape.maxTokens !== undefined && shape.maxTokens < natural.length) {
    return { tokens: natural.slice(0, shape.maxTokens), finishReason: "length" };
  }
  return { tokens: natural, finishReason: tools ? "tool_calls" : "stop" };
}

/**
 * The context phase produces the first token only. It finishes the request ("stop") when
 * nothing is left to generate, and otherwise hands over with "length".
 */
export function contextPlan(full: OutputPlan): OutputPlan {
  return { tokens: full.tokens.slice(0, 1), finishReason: full.tokens.length <= 1 ? "stop" : "length" };
}

function words(stem: string, count: number, kind: "reasoning" | "content"): OutputToken[] {
  return Array.from({ length: count }, (_, i) => ({ kind, text: ` ${stem}${i + 1}` }));
}

function argumentFragments(call: number): string[] {
  return ['{"location": "', `city${call}`, '", "index": ', `${call}}`];
}

function toolCallTokens(count: number, toolNames: readonly string[]): OutputToken[] {
  const calls = Array.from({ length: count }, (_, call) => call);
  const headers: OutputToken[] = calls.map((call) => ({
    kind: "tool-start",
    call,
    callId: `chatcmpl-tool-${randomHex()}`,
    name: toolNames.length > 0 ? (toolNames[call % toolNames.length] ?? `tool_${call}`) : `tool_${call}`,
  }));
  const rounds = argumentFragments(0).map((_, round) =>
    calls.map((call): OutputToken => ({ kind: "tool-args", call, text: argumentFragments(call)[round] ?? "" })),
  );
  return [...headers, ...rounds.flat()];
}

/** The engine token id of an output token (for first_gen_tokens). */
export function tokenIdOf(token: OutputToken): number {
  return tokenId(token.kind === "tool-start" ? token.name : token.text.trim());
}

export function textOf(tokens: readonly OutputToken[], kind: "reasoning" | "content"): string {
  return tokens.map((token) => (token.kind === kind ? token.text : "")).join("");
}

export interface ToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** The complete (or, when cut by max tokens, partial) tool calls among the tokens. */
export function assembleToolCalls(tokens: readonly OutputToken[]): ToolCall[] {
  const calls: { id: string; name: string; arguments: string }[] = [];
  for (const token of tokens) {
    if (token.kind === "tool-start") {
      calls[token.call] = { id: token.callId, name: token.name, arguments: "" };
    } else if (token.kind === "tool-args") {
      const call = calls[token.call];
      if (call !== undefined) call.arguments += token.text;
    }
  }
  return calls.filter((call) => call !== undefined);
}

/** Tool names from a chat request's `tools` (OpenAI function tools). */
export function toolNamesOf(tools: JsonValue | undefined): string[] {
  if (!Array.isArray(tools)) return [];
  return tools.flatMap((tool) => {
    const fn = isJsonObject(tool) ? tool["function"] : undefined;
    const name = isJsonObject(fn) ? fn["name"] : undefined;
    return typeof name === "string" ? [name] : [];
  });
}
