/**
 * A chat or completions request the context phase finished (EOS, stop string, max tokens 1),
 * for a streaming client: the chunks a generation worker would have streamed for its answer.
 * trtllm-serve sends a bare [DONE] here and loses the first token; we stream the content.
 * The relay then treats them as the worker's stream (Anthropic Messages reframes them too).
 */

import { isJsonObject, type JsonObject, type JsonValue } from "../json/json.ts";
import { DONE_EVENT, encodeData } from "../sse/encode.ts";

/** `request` is the worker-bound body: its stream_options.include_usage asks for the usage chunk. */
export function replayChunks(api: "chat" | "completions", answer: JsonObject, request: JsonObject): Uint8Array[] {
  const options = request["stream_options"];
  const includeUsage = isJsonObject(options) && options["include_usage"] === true;
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
