/**
 * The Responses event stream a worker sends: response.created and response.in_progress, the
 * message item's added/delta/done events, then response.completed. Every payload carries its
 * `type` and a `sequence_number` counted from 0. A silent stream repeats the opening's
 * response.in_progress (same object, next number), as keep_responses_stream_alive does.
 */

import type { JsonObject } from "../../json/json.ts";
import { encodeEvent } from "../../sse/encode.ts";
import { textOf, type OutputPlan, type OutputToken } from "../engine/output-plan.ts";
import type { ApiRenderers, RenderContext, StreamRenderer } from "./render-common.ts";
import { finalStatus, messageItem, outputText, responseObject, responsesJson, responsesUsage } from "./responses-object.ts";

type EmitEvent = (type: string, payload: JsonObject) => Uint8Array;

export function responsesRenderers(context: RenderContext): ApiRenderers {
  return {
    json: (tokens, finishReason) => responsesJson(context, tokens, finishReason),
    stream: (plan) => responsesStream(context, plan),
  };
}

function responsesStream(context: RenderContext, plan: OutputPlan): StreamRenderer {
  let sequenceNumber = 0;
  const emitted: OutputToken[] = [];
  const opening = responseObject(context, { status: "in_progress", output: [], usage: null });
  const event: EmitEvent = (type, payload) => encodeEvent(type, JSON.stringify({ type, sequence_number: sequenceNumber++, ...payload }));
  return {
    opening: () => [event("response.created", { response: opening }), event("response.in_progress", { response: opening })],
    token(token, index) {
      emitted.push(token);
      const opened = index === 0 ? itemOpeningEvents(context, event) : [];
      const delta = { ...contentPart(context), delta: textOf([token], "content"), logprobs: [] };
      return [...opened, event("response.output_text.delta", delta)];
    },
    keepalive: () => [event("response.in_progress", { response: opening })],
    error(message) {
      const failed = { ...opening, status: "failed", error: { code: "server_error", message } };
      return [event("error", { code: "engine_error", message, param: null }), event("response.failed", { response: failed })];
    },
    done: () => closingEvents(context, plan, emitted, event),
  };
}

function contentPart(context: RenderContext) {
  return { item_id: context.ids.messageItemId, output_index: 0, content_index: 0 };
}

/** The message item and its text part open just before the first delta. */
function itemOpeningEvents(context: RenderContext, event: EmitEvent): Uint8Array[] {
  return [
    event("response.output_item.added", { output_index: 0, item: messageItem(context, undefined, "in_progress") }),
    event("response.content_part.added", { ...contentPart(context), part: outputText("") }),
  ];
}

/** The message item's done events, then response.completed with the final response object. */
function closingEvents(context: RenderContext, plan: OutputPlan, emitted: readonly OutputToken[], event: EmitEvent): Uint8Array[] {
  const text = textOf(emitted, "content");
  const item = messageItem(context, text, "completed");
  const completed = responseObject(context, {
    status: finalStatus(plan.finishReason),
    output: [item],
    usage: responsesUsage(context, emitted),
  });
  return [
    event("response.output_text.done", { ...contentPart(context), text, logprobs: [] }),
    event("response.content_part.done", { ...contentPart(context), part: outputText(text) }),
    event("response.output_item.done", { output_index: 0, item }),
    event("response.completed", { response: completed }),
  ];
}
