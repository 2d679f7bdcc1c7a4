/**
 * The prompt text of each API shape: what the tokenizer counts and where directives are read.
 * Only text is collected; images and other non-text parts count as nothing.
 */

import { isJsonObject, type JsonValue } from "../../json/json.ts";

/** Text of a message content: a string, or text-bearing parts (text, input_text, output_text, tool_result…). */
export function contentText(content: JsonValue | undefined): string {
  if (typeof content === "string") return content;
  if (!Array.isArray(content)) return "";
  return content
    .map(partText)
    .filter((text) => text !== "")
    .join("\n");
}

function partText(part: JsonValue): string {
  if (typeof part === "string") return part;
  if (!isJsonObject(part)) return "";
  if (typeof part["text"] === "string") return part["text"];
  // Anthropic tool_result blocks nest their own content.
  if (part["content"] !== undefined) return contentText(part["content"]);
  return "";
}

/** Chat or Anthropic messages: every message's content, in order. */
export function messagesText(messages: JsonValue | undefined): string {
  if (!Array.isArray(messages)) return "";
  return messages
    .map((message) => (isJsonObject(message) ? contentText(message["content"]) : ""))
    .filter((text) => text !== "")
    .join("\n");
}

/** Responses: `instructions`, then `input` (a string, or items with content, output or arguments). */
export function responsesText(instructions: JsonValue | undefined, input: JsonValue | undefined): string {
  const parts = [typeof instructions === "string" ? instructions : ""];
  if (typeof input === "string") parts.push(input);
  if (Array.isArray(input)) parts.push(...input.map(inputItemText));
  return parts.filter((text) => text !== "").join("\n");
}

function inputItemText(item: JsonValue): string {
  if (!isJsonObject(item)) return "";
  if (item["content"] !== undefined) return contentText(item["content"]);
  if (typeof item["output"] === "string") return item["output"];
  if (typeof item["arguments"] === "string") return item["arguments"];
  return "";
}

/** Anthropic count_tokens body (or a chat body): system prompt plus messages. */
export function countTokensText(body: JsonValue): string {
  if (!isJsonObject(body)) return "";
  const system = contentText(body["system"]);
  const messages = messagesText(body["messages"]);
  return [system, messages].filter((text) => text !== "").join("\n");
}
