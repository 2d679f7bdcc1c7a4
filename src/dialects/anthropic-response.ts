/** Chat answer → Anthropic message (reference §3.5.2), and Anthropic error bodies (§3.5.4). */
import * as v from "valibot";
import { type ContextOverflow, ProxyError } from "../errors.ts";
import { isJsonObject, type JsonObject, type JsonValue, parseJsonOrUndefined } from "../json/json.ts";
import { ChatCompletion, convertUsage, mapStop, stopFieldsOf, withToolUse } from "./anthropic-chat.ts";
import type { AnthropicIds } from "./anthropic-ids.ts";

type ChatChoice = NonNullable<v.InferOutput<typeof ChatCompletion>["choices"]>[number];

// The client sees only "Internal server error"; the cause keeps the detail for the log.
function badAnswer(detail: string): ProxyError {
  return new ProxyError("CONVERSION_ERROR", 500, "Internal server error", { cause: new Error(detail) });
}

function toolInput(name: string, args: string | null | undefined): JsonObject {
  const input = parseJsonOrUndefined(args ?? "");
  if (!isJsonObject(input)) throw badAnswer(`Tool call '${name}' arguments are not a valid JSON object`);
  return input;
}

function contentOf(choice: ChatChoice, ids: AnthropicIds): JsonObject[] {
  const { message } = choice;
  const content: JsonObject[] = [];
  const reasoning = message.reasoning_content || message.reasoning;
  if (reasoning) content.push({ type: "thinking", thinking: reasoning });
  if (message.content) content.push({ type: "text", text: message.content });
  for (const call of message.tool_calls ?? []) {
    const { name, arguments: args } = call.function;
    content.push({ type: "tool_use", id: call.id || ids.newToolUseId(), name, input: toolInput(name, args) });
  }
  return content;
}

/** A non-streamed chat completion as an Anthropic message; a malformed answer is a 500. */
export function toAnthropicMessage(chat: JsonObject, ids: AnthropicIds): JsonObject {
  const parsed = v.safeParse(ChatCompletion, chat);
  if (!parsed.success) throw badAnswer(`Chat answer does not have the expected shape: ${parsed.issues[0].message}`);
  const [choice] = parsed.output.choices ?? [];
  const content = choice === undefined ? [] : contentOf(choice, ids);
  const stop = withToolUse(
    mapStop(choice?.finish_reason, choice?.stop_reason),
    content.some((block) => block["type"] === "tool_use"),
  );
  // Anthropic messages carry at least one content block.
  if (content.length === 0) content.push({ type: "text", text: "" });
  return {
    id: ids.newMessageId(),
    type: "message",
    role: "assistant",
    model: parsed.output.model ?? "",
    content,
    ...stopFieldsOf(stop),
    usage: convertUsage(parsed.output.usage),
  };
}

/**
 * Anthropic's error types by status (docs.anthropic.com/en/api/errors), which its SDKs and
 * Claude Code branch on: rate_limit_error and overloaded_error are retried with back-off. An
 * unavailable worker (503) is Anthropic's overloaded_error, which Anthropic sends as HTTP 529.
 */
const SPECIFIC_TYPES: Readonly<Record<number, string>> = {
  401: "authentication_error",
  403: "permission_error",
  404: "not_found_error",
  413: "request_too_large",
  429: "rate_limit_error",
  503: "overloaded_error",
  529: "overloaded_error",
};

/** The HTTP status Anthropic answers overloaded_error with. */
export const ANTHROPIC_OVERLOADED_STATUS = 529;

/** `{"type":"error","error":{type, message}}`; the type follows the status (its class when not specific). */
export function anthropicErrorBody(status: number, message: string): JsonObject {
  const type = SPECIFIC_TYPES[status] ?? (status >= 400 && status < 500 ? "invalid_request_error" : "api_error");
  return { type: "error", error: { type, message } };
}

// Worker and transport messages can hold worker addresses; the client never sees one.
const URL_LIKE = /\b[a-z][a-z0-9+.-]*:\/\/[^\s"'<>]+/gi;
const HOST_PORT = /\b(?:\d{1,3}\.){3}\d{1,3}(?::\d+)?\b|\[[0-9a-f:]+\](?::\d+)?|\blocalhost:\d+\b/gi;

export function scrubAddresses(message: string): string {
  return message.replace(URL_LIKE, "<url>").replace(HOST_PORT, "<address>");
}

function messageOf(value: JsonValue | undefined): string | undefined {
  if (typeof value === "string") return value === "" ? undefined : value;
  if (isJsonObject(value)) return messageOf(value["message"]) ?? messageOf(value["msg"]);
  if (Array.isArray(value)) {
    // FastAPI validation errors: detail is a list of {loc, msg, type}.
    const parts = value.map(messageOf).filter((part) => part !== undefined);
    return parts.length > 0 ? parts.join("; ") : undefined;
  }
  return undefined;
}

function parseErrorBody(text: string): JsonValue | undefined {
  // Some workers prefix the JSON with text (status line, exception name): use from the first "{".
  for (const candidate of [text, text.slice(Math.max(text.indexOf("{"), 0))]) {
    const value = parseJsonOrUndefined(candidate);
    if (value !== undefined) return value;
  }
  return undefined;
}

/**
 * The client-facing message of an OpenAI/worker error body (`error.message`, `message`,
 * `detail`), addresses scrubbed. Undefined when the body says nothing usable: raw non-JSON
 * text is never returned, as it may name the worker.
 */
export function workerErrorMessage(body: Uint8Array | string | JsonValue): string | undefined {
  const value =
    body instanceof Uint8Array ? parseErrorBody(new TextDecoder().decode(body)) : typeof body === "string" ? parseErrorBody(body) : body;
  if (!isJsonObject(value)) return undefined;
  const message = messageOf(value["error"]) ?? messageOf(value["message"]) ?? messageOf(value["detail"]);
  return message === undefined ? undefined : scrubAddresses(message);
}

/**
 * The message a failed request reports. A worker's own error answer gives its message, so a
 * late in-band error event and the HTTP error it replaces carry the same text (seed #21388).
 */
export function anthropicErrorMessage(error: ProxyError): string {
  if (error.overflow !== undefined) return promptTooLong(error.overflow, error.message);
  const answer = error.workerAnswer;
  return (answer === undefined ? undefined : workerErrorMessage(answer.body)) ?? scrubAddresses(error.message);
}

/**
 * A prompt too long for the context in Anthropic's own words, "prompt is too long: N tokens >
 * M maximum": the message Claude Code matches to compact the conversation and retry (it reads
 * the two counts for how much to drop). A worker that gave no counts has its text follow.
 */
export function promptTooLong(overflow: ContextOverflow, workerMessage: string): string {
  const { promptTokens, maxTokens } = overflow;
  if (promptTokens !== undefined && maxTokens !== undefined) return `prompt is too long: ${promptTokens} tokens > ${maxTokens} maximum`;
  return `prompt is too long: ${scrubAddresses(workerMessage)}`;
}

/**
 * The status and Anthropic body a request that failed before its response started answers
 * with: an overloaded or unavailable worker is a 529 overloaded_error, as from Anthropic.
 */
export function anthropicErrorFor(error: ProxyError): { status: number; body: JsonObject } {
  // Saturated workers (--max-worker-queue) are Anthropic's "overloaded", as Dynamo answers them.
  const overloaded = error.status === 503 || error.code === "WORKERS_BUSY";
  const status = overloaded ? ANTHROPIC_OVERLOADED_STATUS : error.status;
  return { status, body: anthropicErrorBody(overloaded ? 503 : error.status, anthropicErrorMessage(error)) };
}
