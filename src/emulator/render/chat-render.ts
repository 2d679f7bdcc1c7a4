/** Chat completions replies: the JSON answer and the `chat.completion.chunk` stream. */

import type { JsonObject } from "../../json/json.ts";
import { DONE_EVENT, encodeData } from "../../sse/encode.ts";
import { assembleToolCalls, textOf, type FinishReason, type OutputPlan, type OutputToken } from "../engine/output-plan.ts";
import { openAiStreamError, openAiUsage, type ApiRenderers, type RenderContext, type StreamRenderer } from "./render-common.ts";

export function chatRenderers(context: RenderContext): ApiRenderers {
  return {
    json: (tokens, finishReason) => chatJson(context, tokens, finishReason),
    stream: (plan) => chatStream(context, plan),
  };
}

function chatJson(context: RenderContext, tokens: readonly OutputToken[], finishReason: FinishReason): JsonObject {
  const content = textOf(tokens, "content");
  const reasoning = textOf(tokens, "reasoning");
  const toolCalls = assembleToolCalls(tokens).map((call) => ({
    id: call.id,
    type: "function",
    function: { name: call.name, arguments: call.arguments },
  }));
  return {
    id: context.ids.replyId,
    object: "chat.completion",
    created: context.ids.created,
    model: context.model,
    choices: [
      {
        index: 0,
        message: {
          role: "assistant",
          content: content === "" && toolCalls.length > 0 ? null : content,
          reasoning_content: reasoning === "" ? null : reasoning,
          tool_calls: toolCalls,
        },
        logprobs: null,
        finish_reason: finishReason,
        stop_reason: null,
      },
    ],
    usage: openAiUsage(context, tokens),
  };
}

/** The delta one output token adds; tool calls stream as OpenAI tool_call fragments. */
function tokenDelta(token: OutputToken): JsonObject {
  if (token.kind === "content") return { content: token.text };
  if (token.kind === "reasoning") return { reasoning_content: token.text };
  if (token.kind === "tool-args") return { tool_calls: [{ index: token.call, function: { arguments: token.text } }] };
  const header = { index: token.call, id: token.callId, type: "function", function: { name: token.name, arguments: "" } };
  return { tool_calls: [header] };
}

function chatStream(context: RenderContext, plan: OutputPlan): StreamRenderer {
  const emitted: OutputToken[] = [];
  const continuous = context.request.includeUsage && context.request.continuousUsage;
  const chunk = (delta: JsonObject, finishReason: FinishReason | null): Uint8Array =>
    encodeData(
      JSON.stringify({
        id: context.ids.replyId,
        object: "chat.completion.chunk",
        created: context.ids.created,
        model: context.model,
        choices: [{ index: 0, delta, logprobs: null, finish_reason: finishReason, stop_reason: null }],
        ...(continuous ? { usage: openAiUsage(context, emitted) } : {}),
      }),
    );
  return {
    opening: () => [],
    token(token, index) {
      // The role arrives in its own chunk just before the first token, as trtllm-serve sends it.
      const role = index === 0 ? [chunk({ role: "assistant", content: "" }, null)] : [];
      emitted.push(token);
      const last = index === plan.tokens.length - 1;
      return [...role, chunk(tokenDelta(token), last ? plan.finishReason : null)];
    },
    keepalive: () => [],
    error: (message) => [openAiStreamError(message)],
    done() {
      const usage = context.request.includeUsage ? [usageChunk(context, emitted)] : [];
      return [...usage, DONE_EVENT];
    },
  };
}

function usageChunk(context: RenderContext, tokens: readonly OutputToken[]): Uint8Array {
  return encodeData(
    JSON.stringify({
      id: context.ids.replyId,
      object: "chat.completion.chunk",
      created: context.ids.created,
      model: context.model,
      choices: [],
      usage: openAiUsage(context, tokens),
    }),
  );
}
