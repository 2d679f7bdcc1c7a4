/**
 * A request's prompt as the routers see it without a tokenizer: one deterministic text, in
 * which a later turn of a conversation starts with the text of the turn before (so prefixes
 * match across turns), and the prompt's token ids when the request carries them.
 *
 * - chat: each message as `role:content`, one per line; text parts of a content list joined by
 *   newlines, other parts as `[type]`; an assistant's tool calls as `[tool_call name(arguments)]`.
 * - completions: the prompt string (a list of strings joined by newlines; ids give no text).
 * - responses: `system:instructions`, then the input (a string as `user:input`, items as chat
 *   messages; function calls and their outputs as tool calls and `tool:` messages).
 */

import { isJsonObject, type JsonObject, type JsonValue } from "../json.ts";

export type PromptApi = "completions" | "chat" | "responses";

export function promptTextOf(api: PromptApi, body: JsonObject): string {
  if (api === "chat") return linesOf(body["messages"], messageText);
  if (api === "completions") return completionsText(body["prompt"]);
  const lines: string[] = [];
  if (typeof body["instructions"] === "string") lines.push(`system:${body["instructions"]}`);
  const input = body["input"];
  if (typeof input === "string") lines.push(`user:${input}`);
  else if (Array.isArray(input)) lines.push(linesOf(input, inputItemText));
  return lines.filter((line) => line !== "").join("\n");
}

/** Completions `prompt` as ids (or a one-element list of them); chat and responses `prompt_token_ids`. */
export function promptTokenIdsOf(api: PromptApi, body: JsonObject): readonly number[] | undefined {
  if (api !== "completions") return tokenIds(body["prompt_token_ids"]);
  const prompt = body["prompt"];
  const single = Array.isArray(prompt) && prompt.length === 1 && Array.isArray(prompt[0]) ? prompt[0] : prompt;
  return tokenIds(single);
}

function tokenIds(value: JsonValue | undefined): readonly number[] | undefined {
  if (!Array.isArray(value) || value.length === 0 || !value.every(isTokenId)) return undefined;
  return value;
}

function isTokenId(value: JsonValue): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

function completionsText(prompt: JsonValue | undefined): string {
  if (typeof prompt === "string") return prompt;
  if (!Array.isArray(prompt)) return "";
  return prompt.filter((item) => typeof item === "string").join("\n");
}

function linesOf(items: JsonValue | undefined, render: (item: JsonObject) => string): string {
  if (!Array.isArray(items)) return "";
  let text = "";
  for (const item of items) {
    const line = isJsonObject(item) ? render(item) : "";
    if (line !== "") text = text === "" ? line : concatLines(text, line);
  }
  return text;
}

/**
 * Lines joined by concatenation, not Array.join: the runtime keeps a concatenation as a rope of
 * its parts, which costs no copy until the text is read (only text-hashing routers read it;
 * the others want its length), where join copies every message's text at once.
 */
function concatLines(text: string, line: string): string {
  return `${text}\n${line}`;
}

function messageText(message: JsonObject): string {
  const role = typeof message["role"] === "string" ? message["role"] : "";
  const calls = Array.isArray(message["tool_calls"]) ? message["tool_calls"] : [];
  const callText = calls.map((call) => (isJsonObject(call) ? toolCallText(call["function"]) : "")).join("");
  return `${role}:${contentText(message["content"])}${callText}`;
}

function inputItemText(item: JsonObject): string {
  const type = item["type"];
  if (type === "function_call") return `assistant:${toolCallText(item)}`;
  if (type === "function_call_output") return `tool:${typeof item["output"] === "string" ? item["output"] : contentText(item["output"])}`;
  if (type === undefined || type === "message") return messageText(item);
  return "";
}

function toolCallText(call: JsonValue | undefined): string {
  if (!isJsonObject(call)) return "";
  const name = typeof call["name"] === "string" ? call["name"] : "";
  const args = typeof call["arguments"] === "string" ? call["arguments"] : "";
  return `[tool_call ${name}(${args})]`;
}

function contentText(content: JsonValue | undefined): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map((part) => {
      if (typeof part === "string") return part;
      if (!isJsonObject(part)) return "";
      if (typeof part["text"] === "string") return part["text"];
      return typeof part["type"] === "string" ? `[${part["type"]}]` : "";
    })
    .join("\n");
}
