/**
 * A Responses request the context phase finished, for a streaming client: the event sequence
 * a worker would have streamed for the finished response (the dialect then renumbers it),
 * ending in its terminal event, never `[DONE]` (the Responses protocol has none).
 */

import { isJsonObject, type JsonObject } from "../json/json.ts";
import { encodeEvent } from "../sse/encode.ts";

/** The Responses event sequence a worker would have streamed for this finished response. */
export function replayResponseEvents(response: JsonObject): Uint8Array[] {
  const events: Uint8Array[] = [];
  let seq = 0;
  const emit = (type: string, payload: JsonObject): void => {
    events.push(encodeEvent(type, JSON.stringify({ type, sequence_number: seq++, ...payload })));
  };
  const opening = { ...response, status: "in_progress", output: [], usage: null };
  emit("response.created", { response: opening });
  emit("response.in_progress", { response: opening });
  const output = Array.isArray(response["output"]) ? response["output"] : [];
  for (const [outputIndex, item] of output.entries()) {
    if (!isJsonObject(item)) continue;
    emit("response.output_item.added", { output_index: outputIndex, item: { ...item, status: "in_progress", content: [] } });
    const content = Array.isArray(item["content"]) ? item["content"] : [];
    for (const [contentIndex, part] of content.entries()) {
      if (!isJsonObject(part)) continue;
      const where = { item_id: item["id"] ?? null, output_index: outputIndex, content_index: contentIndex };
      emit("response.content_part.added", { ...where, part: { ...part, text: "" } });
      if (typeof part["text"] === "string") {
        emit("response.output_text.delta", { ...where, delta: part["text"], logprobs: [] });
        emit("response.output_text.done", { ...where, text: part["text"], logprobs: [] });
      }
      emit("response.content_part.done", { ...where, part });
    }
    emit("response.output_item.done", { output_index: outputIndex, item });
  }
  // The terminal event is the one the status names, as on every worker stream: a response cut
  // at max_output_tokens ends in response.incomplete (responses_done_generator,
  // test_disagg_responses_api.py test_ctx_only_truncated_replay_terminates_as_incomplete @ 1593a0d7).
  emit(response["status"] === "incomplete" ? "response.incomplete" : "response.completed", { response });
  return events;
}
