/** Completions replies: the JSON answer and the `text_completion` chunk stream. */

import type { JsonObject } from "../../json/json.ts";
import { DONE_EVENT, encodeData } from "../../sse/encode.ts";
import { textOf, type FinishReason, type OutputPlan, type OutputToken } from "../engine/output-plan.ts";
import { openAiStreamError, openAiUsage, type ApiRenderers, type RenderContext, type StreamRenderer } from "./render-common.ts";

export function completionsRenderers(context: RenderContext): ApiRenderers {
  return {
    json: (tokens, finishReason) => ({
      ...envelope(context),
      choices: [choice(textOf(tokens, "content"), finishReason)],
      usage: openAiUsage(context, tokens),
    }),
    stream: (plan) => completionsStream(context, plan),
  };
}

function envelope(context: RenderContext): JsonObject {
  return { id: context.ids.replyId, object: "text_completion", created: context.ids.created, model: context.model };
}

function choice(text: string, finishReason: FinishReason | null): JsonObject {
  return { index: 0, text, logprobs: null, finish_reason: finishReason, stop_reason: null };
}

function completionsStream(context: RenderContext, plan: OutputPlan): StreamRenderer {
  const emitted: OutputToken[] = [];
  const continuous = context.request.includeUsage && context.request.continuousUsage;
  return {
    opening: () => [],
    token(token, index) {
      emitted.push(token);
      const finishReason = index === plan.tokens.length - 1 ? plan.finishReason : null;
      const usage = continuous ? { usage: openAiUsage(context, emitted) } : {};
      return [encodeData(JSON.stringify({ ...envelope(context), choices: [choice(textOf([token], "content"), finishReason)], ...usage }))];
    },
    keepalive: () => [],
    error: (message) => [openAiStreamError(message)],
    done() {
      if (!context.request.includeUsage) return [DONE_EVENT];
      const usage = { ...envelope(context), choices: [], usage: openAiUsage(context, emitted) };
      return [encodeData(JSON.stringify(usage)), DONE_EVENT];
    },
  };
}
