/** Anthropic system prompt and message history → chat messages (reference §3.5.1). */
import { badRequest } from "../errors.ts";
import type { JsonObject } from "../json/json.ts";
import {
  type AnthropicMessage,
  type ImageBlock,
  KNOWN_BLOCK_TYPES,
  KnownBlock,
  type MessagesRequest,
  type RawBlock,
  validate,
} from "./anthropic-request-schema.ts";

// Claude Code's per-request telemetry line: a marker then `key=value;` pairs in any order.
// Matched by shape, not by a list of known keys, because the client's key list drifts.
const BILLING_LINE = /^x-anthropic-billing-header:\s*(?:[A-Za-z_][\w.-]*=[^;]*;\s*)+$/;

type Role = AnthropicMessage["role"];
type TextPart = { type: "text"; text: string };
type ImagePart = { type: "image_url"; image_url: { url: string } };
type Part = TextPart | ImagePart;

/** What one Anthropic message accumulates before it becomes chat messages. */
interface Turn {
  readonly role: Role;
  readonly out: JsonObject[];
  parts: Part[];
  readonly toolCalls: JsonObject[];
  readonly reasoning: string[];
}

function systemTextParts(system: MessagesRequest["system"]): string[] {
  if (system === null || system === undefined) return [];
  if (typeof system === "string") return system === "" ? [] : [system];
  // Only position 0, where the client puts it: a genuine later block that happens to look
  // like telemetry is kept.
  return system
    .filter((block, index) => !(index === 0 && BILLING_LINE.test(block.text)))
    .map((block) => block.text)
    .filter((text) => text !== "");
}

function readBlock(raw: RawBlock, path: string): KnownBlock {
  // Refusing beats dropping: a discarded block changes the prompt without the client knowing.
  if (!KNOWN_BLOCK_TYPES.has(raw.type)) {
    throw badRequest(`Anthropic content block type '${raw.type}' is not supported by this server`);
  }
  return validate(KnownBlock, raw, path);
}

function imagePart(block: ImageBlock): ImagePart {
  const { source } = block;
  if (source.type === "url" && source.url) return { type: "image_url", image_url: { url: source.url } };
  if (source.type === "base64" && source.data) {
    const url = `data:${source.media_type || "image/png"};base64,${source.data}`;
    return { type: "image_url", image_url: { url } };
  }
  throw badRequest(`image block with source type '${source.type}' has no url or data`);
}

function toolResultText(content: string | RawBlock[] | null | undefined, path: string): string {
  if (content === null || content === undefined) return "";
  if (typeof content === "string") return content;
  return content
    .map((raw, index) => {
      if (raw.type !== "text") {
        throw badRequest(`Content block type '${raw.type}' inside tool_result is not supported`);
      }
      const block = readBlock(raw, `${path}.${index}`);
      return block.type === "text" ? block.text : "";
    })
    .join("\n");
}

/** Emits the text/image parts gathered so far, before a tool message is placed after them. */
function flushParts(turn: Turn): void {
  if (turn.parts.length === 0) return;
  const message: JsonObject = { role: turn.role, content: turn.parts };
  if (turn.role === "assistant" && turn.reasoning.length > 0) {
    message["reasoning"] = turn.reasoning.join("");
    turn.reasoning.length = 0;
  }
  turn.out.push(message);
  turn.parts = [];
}

function addBlock(turn: Turn, block: KnownBlock, newToolUseId: () => string, path: string): void {
  switch (block.type) {
    case "text":
      turn.parts.push({ type: "text", text: block.text });
      return;
    case "image":
      turn.parts.push(imagePart(block));
      return;
    case "tool_use": {
      const fn = { name: block.name, arguments: JSON.stringify(block.input ?? {}) };
      turn.toolCalls.push({ id: block.id ?? newToolUseId(), type: "function", function: fn });
      return;
    }
    case "tool_result": {
      flushParts(turn);
      const text = toolResultText(block.content, `${path}.content`);
      const content = block.is_error === true ? `Tool execution failed: ${text}` : text;
      turn.out.push({ role: "tool", tool_call_id: block.tool_use_id, content });
      return;
    }
    case "thinking":
      if (turn.role !== "assistant") throw badRequest("thinking content blocks are only valid in assistant messages");
      turn.reasoning.push(block.thinking);
      return;
    case "redacted_thinking":
      throw badRequest("redacted_thinking history is not supported by this server");
  }
}

function finishAssistantWithTools(turn: Turn): void {
  // A chat message with tool_calls carries text only: an image beside them would be lost.
  if (turn.parts.some((part) => part.type !== "text")) {
    throw badRequest("assistant messages combining tool_use with image content are not supported");
  }
  const text = turn.parts.map((part) => (part.type === "text" ? part.text : "")).join("");
  const message: JsonObject = { role: "assistant", content: text === "" ? null : text, tool_calls: turn.toolCalls };
  if (turn.reasoning.length > 0) message["reasoning"] = turn.reasoning.join("");
  turn.out.push(message);
}

function finishTurn(turn: Turn): void {
  if (turn.role === "assistant" && turn.toolCalls.length > 0) return finishAssistantWithTools(turn);
  if (turn.toolCalls.length > 0) {
    throw badRequest(`tool_use content blocks are only valid in assistant messages, not '${turn.role}'`);
  }
  flushParts(turn);
  if (turn.role === "assistant" && turn.reasoning.length > 0) {
    turn.out.push({ role: "assistant", content: null, reasoning: turn.reasoning.join("") });
  }
}

function convertBlocks(message: AnthropicMessage, blocks: RawBlock[], at: number, ctx: Converter): void {
  const turn: Turn = { role: message.role, out: ctx.out, parts: [], toolCalls: [], reasoning: [] };
  for (const [index, raw] of blocks.entries()) {
    const path = `messages.${at}.content.${index}`;
    addBlock(turn, readBlock(raw, path), ctx.newToolUseId, path);
  }
  finishTurn(turn);
}

interface Converter {
  readonly out: JsonObject[];
  readonly newToolUseId: () => string;
}

/**
 * The chat message list: one system message first (system field plus leading system
 * messages), then the history in order.
 */
export function convertMessages(request: MessagesRequest, newToolUseId: () => string): JsonObject[] {
  const systemParts = systemTextParts(request.system);
  const ctx: Converter = { out: [], newToolUseId };
  // Only system messages before the first real turn join the opening prompt. Clients append
  // transient system messages at the tail; hoisting them would rewrite the prompt's front and
  // invalidate the whole KV prefix, so they stay where the client put them.
  let leading = true;
  for (const [at, message] of request.messages.entries()) {
    leading &&= message.role === "system";
    if (leading) systemParts.push(...leadingSystemText(message));
    else if (typeof message.content === "string") ctx.out.push({ role: message.role, content: message.content });
    else convertBlocks(message, message.content, at, ctx);
  }
  if (systemParts.length > 0) ctx.out.unshift({ role: "system", content: systemParts.join("\n\n") });
  return ctx.out;
}

function leadingSystemText(message: AnthropicMessage): string[] {
  if (typeof message.content === "string") return message.content === "" ? [] : [message.content];
  return message.content.flatMap((raw) => (raw.type === "text" && typeof raw["text"] === "string" ? [raw["text"]] : []));
}
