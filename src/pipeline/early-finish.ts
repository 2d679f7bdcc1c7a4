import { isJsonObject, type JsonObject, type JsonValue } from "../json.ts";
import { DONE_EVENT, encodeData, encodeEvent } from "../sse/encode.ts";
import { streamOf } from "../sse/bytes.ts";
import type { ApiKind } from "./types.ts";

/**
 * A request the context phase finished (EOS, stop string, max tokens 1), for a streaming
 * client: its answer as a proper stream. trtllm-serve sends a bare [DONE] here and loses the
 * first token; we stream the content.
 */
export function answerAsStream(api: ApiKind, answer: JsonObject, includeUsage: boolean): ReadableStream<Uint8Array> {
  const frames = api === "responses" ? responseEvents(answer) : chunkFrames(api, answer, includeUsage);
  return streamOf(frames);
}

function chunkFrames(api: ApiKind, answer: JsonObject, includeUsage: boolean): Uint8Array[] {
  const object = api === "chat" ? "chat.completion.chunk" : "text_completion";
  const base = { id: answer["id"] ?? null, object, created: answer["created"] ?? null, model: answer["model"] ?? null };
  const choices = Array.isArray(answer["choices"]) ? answer["choices"] : [];
  const frames: Uint8Array[] = [];
  for (const [index, choice] of choices.entries()) {
    if (!isJsonObject(choice)) continue;
    const finish = choice["finish_reason"] ?? null;
    if (api === "chat") {
      const message = isJsonObject(choice["message"]) ? choice["message"] : {};
      const delta = pick(message, ["role", "content", "reasoning_content", "reasoning", "tool_calls"]);
      frames.push(chunk(base, [{ index, delta, finish_reason: null }]));
      frames.push(chunk(base, [{ index, delta: {}, finish_reason: finish }]));
    } else {
      frames.push(chunk(base, [{ index, text: choice["text"] ?? "", finish_reason: finish }]));
    }
  }
  if (includeUsage && answer["usage"] !== undefined) frames.push(chunk({ ...base, usage: answer["usage"] ?? null }, []));
  frames.push(DONE_EVENT);
  return frames;
}

function chunk(base: JsonObject, choices: JsonValue[]): Uint8Array {
  return encodeData(JSON.stringify({ ...base, choices }));
}

function pick(source: JsonObject, keys: readonly string[]): JsonObject {
  const out: JsonObject = {};
  for (const key of keys) if (source[key] !== undefined && source[key] !== null) out[key] = source[key];
  return out;
}

/** The Responses event sequence a worker would have streamed for this finished response. */
function responseEvents(response: JsonObject): Uint8Array[] {
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
  emit("response.completed", { response });
  return events;
}
