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

import { isJsonObject, type JsonObject, type JsonValue } from "../json/json.ts";

export type PromptApi = "completions" | "chat" | "responses";

export function promptTextOf(api: PromptApi, body: JsonObject): string {
  const out = new PromptText(true);
  walkPrompt(out, api, body);
  return out.parts.join("");
}

/**
 * The length of promptTextOf's text, without building it: the text copies every message's
 * content, and only text-hashing routers read it; the others weigh a prompt by its length.
 */
export function promptLengthOf(api: PromptApi, body: JsonObject): number {
  const out = new PromptText(false);
  walkPrompt(out, api, body);
  return out.length;
}

function walkPrompt(out: PromptText, api: PromptApi, body: JsonObject): void {
  if (api === "chat") linesOf(out, body["messages"], messageText);
  else if (api === "completions") completionsText(out, body["prompt"]);
  else {
    const instructions = body["instructions"];
    if (typeof instructions === "string") out.line("system:", instructions);
    const input = body["input"];
    if (typeof input === "string") out.line("user:", input);
    else if (Array.isArray(input)) linesOf(out, input, inputItemText);
  }
}

/** Lines of text, a newline between two lines, empty lines left out: collected as parts, or only measured. */
class PromptText {
  readonly parts: string[] = [];
  length = 0;
  readonly #collect: boolean;
  #lines = 0;
  #lineStart = 0;
  #lineLength = 0;

  constructor(collect: boolean) {
    this.#collect = collect;
  }

  beginLine(): void {
    this.#lineStart = this.parts.length;
    this.#lineLength = 0;
    if (this.#lines > 0) this.push("\n");
  }

  endLine(): void {
    const newline = this.#lines > 0 ? 1 : 0;
    if (this.#lineLength > newline) {
      this.#lines++;
      return;
    }
    // Nothing but the newline: the line is left out.
    this.length -= this.#lineLength;
    this.parts.length = this.#lineStart;
  }

  line(...parts: string[]): void {
    this.beginLine();
    for (const part of parts) this.push(part);
    this.endLine();
  }

  push(part: string): void {
    if (part === "") return;
    this.length += part.length;
    this.#lineLength += part.length;
    if (this.#collect) this.parts.push(part);
  }
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

function completionsText(out: PromptText, prompt: JsonValue | undefined): void {
  if (typeof prompt === "string") out.line(prompt);
  else if (Array.isArray(prompt)) {
    out.beginLine();
    let first = true;
    for (const item of prompt) {
      if (typeof item !== "string") continue;
      if (!first) out.push("\n");
      out.push(item);
      first = false;
    }
    out.endLine();
  }
}

function linesOf(out: PromptText, items: JsonValue | undefined, render: (out: PromptText, item: JsonObject) => void): void {
  if (!Array.isArray(items)) return;
  for (const item of items) {
    if (!isJsonObject(item)) continue;
    out.beginLine();
    render(out, item);
    out.endLine();
  }
}

function messageText(out: PromptText, message: JsonObject): void {
  const role = message["role"];
  if (typeof role === "string") out.push(role);
  out.push(":");
  contentText(out, message["content"]);
  const calls = message["tool_calls"];
  if (Array.isArray(calls)) for (const call of calls) if (isJsonObject(call)) out.push(toolCallText(call["function"]));
}

function inputItemText(out: PromptText, item: JsonObject): void {
  const type = item["type"];
  if (type === "function_call") {
    out.push("assistant:");
    out.push(toolCallText(item));
  } else if (type === "function_call_output") {
    const output = item["output"];
    out.push("tool:");
    if (typeof output === "string") out.push(output);
    else contentText(out, output);
  } else if (type === undefined || type === "message") messageText(out, item);
}

function toolCallText(call: JsonValue | undefined): string {
  if (!isJsonObject(call)) return "";
  const name = typeof call["name"] === "string" ? call["name"] : "";
  const args = typeof call["arguments"] === "string" ? call["arguments"] : "";
  return `[tool_call ${name}(${args})]`;
}

/** A message's content: a string as it is, a list's parts one per line. */
function contentText(out: PromptText, content: JsonValue | undefined): void {
  if (typeof content === "string") out.push(content);
  else if (Array.isArray(content)) {
    content.forEach((part, i) => {
      if (i > 0) out.push("\n");
      if (typeof part === "string") out.push(part);
      else if (isJsonObject(part) && typeof part["text"] === "string") out.push(part["text"]);
      else if (isJsonObject(part) && typeof part["type"] === "string") out.push(`[${part["type"]}]`);
    });
  }
}
