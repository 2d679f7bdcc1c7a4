/**
 * The Responses API `response` object a worker builds from the request
 * (ResponsesResponse.from_request): the request's parameters echoed, with the API defaults
 * for those it did not set.
 */

import type { JsonObject, JsonValue } from "../../json/json.ts";
import type { FinishReason, OutputToken } from "../engine/output-plan.ts";
import { textOf } from "../engine/output-plan.ts";
import type { RenderContext } from "./render-common.ts";

export type ResponseStatus = "in_progress" | "completed" | "incomplete" | "failed";

export interface ResponseState {
  readonly status: ResponseStatus;
  readonly output: readonly JsonValue[];
  readonly usage: JsonObject | null;
  readonly error?: JsonObject;
}

/** Request fields echoed into the response, with the default used when the request omits one. */
const ECHOED_PARAMS: readonly (readonly [string, JsonValue])[] = [
  ["instructions", null],
  ["max_output_tokens", null],
  ["max_tool_calls", null],
  ["metadata", {}],
  ["parallel_tool_calls", true],
  ["previous_response_id", null],
  ["reasoning", null],
  ["service_tier", "auto"],
  ["store", true],
  ["temperature", 1],
  ["text", { format: { type: "text" } }],
  ["tool_choice", "auto"],
  ["tools", []],
  ["top_logprobs", 0],
  ["top_p", 1],
  ["truncation", "disabled"],
  ["user", null],
];

export function responseObject(context: RenderContext, state: ResponseState): JsonObject {
  const body = context.request.body;
  const echoed = Object.fromEntries(ECHOED_PARAMS.map(([field, fallback]) => [field, body[field] ?? fallback]));
  return {
    id: context.ids.replyId,
    object: "response",
    created_at: context.ids.created,
    model: context.model,
    status: state.status,
    background: false,
    error: state.error ?? null,
    incomplete_details: state.status === "incomplete" ? { reason: "max_output_tokens" } : null,
    output: [...state.output],
    usage: state.usage,
    ...echoed,
  };
}

/** "length" means max_output_tokens cut the answer: the response is incomplete. */
export function finalStatus(finishReason: FinishReason): ResponseStatus {
  return finishReason === "length" ? "incomplete" : "completed";
}

export function outputText(text: string): JsonObject {
  return { type: "output_text", text, annotations: [], logprobs: [] };
}

export function messageItem(context: RenderContext, text: string | undefined, status: "in_progress" | "completed") {
  return {
    id: context.ids.messageItemId,
    type: "message",
    status,
    role: "assistant",
    content: text === undefined ? [] : [outputText(text)],
  };
}

export function responsesUsage(context: RenderContext, tokens: readonly OutputToken[]): JsonObject {
  return {
    input_tokens: context.promptTokens,
    input_tokens_details: { cached_tokens: context.cachedTokens },
    output_tokens: tokens.length,
    output_tokens_details: { reasoning_tokens: 0 },
    total_tokens: context.promptTokens + tokens.length,
  };
}

/** The non-streamed reply: the finished response object. */
export function responsesJson(context: RenderContext, tokens: readonly OutputToken[], finishReason: FinishReason) {
  return responseObject(context, {
    status: finalStatus(finishReason),
    output: [messageItem(context, textOf(tokens, "content"), "completed")],
    usage: responsesUsage(context, tokens),
  });
}
