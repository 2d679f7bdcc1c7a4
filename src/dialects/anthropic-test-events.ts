/**
 * Test helper: valibot schemas of the Anthropic stream events, strict (no extra or null
 * fields), and a checker of the event grammar. Used only by the Anthropic dialect tests.
 */
import { expect } from "bun:test";
import * as v from "valibot";
import { isJsonObject, type JsonObject, type JsonValue, parseJson } from "../json/json.ts";
import { SseFrameScanner } from "../sse/frame-scanner.ts";

const count = v.pipe(v.number(), v.integer(), v.minValue(0));
const Usage = v.strictObject({
  input_tokens: count,
  output_tokens: count,
  cache_read_input_tokens: v.optional(v.pipe(count, v.minValue(1))),
});
const index = count;
const stopReason = v.picklist(["end_turn", "max_tokens", "stop_sequence", "tool_use"]);

const EVENT_SCHEMAS = {
  ping: v.strictObject({ type: v.literal("ping") }),
  message_start: v.strictObject({
    type: v.literal("message_start"),
    message: v.strictObject({
      id: v.pipe(v.string(), v.regex(/^msg_/)),
      type: v.literal("message"),
      role: v.literal("assistant"),
      model: v.string(),
      content: v.pipe(v.array(v.unknown()), v.length(0)),
      usage: Usage,
    }),
  }),
  content_block_start: v.strictObject({
    type: v.literal("content_block_start"),
    index,
    content_block: v.variant("type", [
      v.strictObject({ type: v.literal("text"), text: v.literal("") }),
      v.strictObject({ type: v.literal("thinking"), thinking: v.literal("") }),
      v.strictObject({
        type: v.literal("tool_use"),
        id: v.pipe(v.string(), v.minLength(1)),
        name: v.pipe(v.string(), v.minLength(1)),
        input: v.strictObject({}),
      }),
    ]),
  }),
  content_block_delta: v.strictObject({
    type: v.literal("content_block_delta"),
    index,
    delta: v.variant("type", [
      v.strictObject({ type: v.literal("text_delta"), text: v.pipe(v.string(), v.minLength(1)) }),
      v.strictObject({ type: v.literal("thinking_delta"), thinking: v.pipe(v.string(), v.minLength(1)) }),
      v.strictObject({ type: v.literal("input_json_delta"), partial_json: v.pipe(v.string(), v.minLength(1)) }),
    ]),
  }),
  content_block_stop: v.strictObject({ type: v.literal("content_block_stop"), index }),
  message_delta: v.strictObject({
    type: v.literal("message_delta"),
    delta: v.strictObject({ stop_reason: stopReason, stop_sequence: v.optional(v.string()) }),
    usage: Usage,
  }),
  message_stop: v.strictObject({ type: v.literal("message_stop") }),
  error: v.strictObject({
    type: v.literal("error"),
    error: v.strictObject({
      type: v.picklist([
        "invalid_request_error",
        "api_error",
        "overloaded_error",
        "rate_limit_error",
        "request_too_large",
        "authentication_error",
        "permission_error",
        "not_found_error",
      ]),
      message: v.string(),
    }),
  }),
};

export type EventName = keyof typeof EVENT_SCHEMAS;

export interface SeenEvent {
  readonly event: string;
  readonly data: JsonObject;
}

function isEventName(name: string): name is EventName {
  return Object.hasOwn(EVENT_SCHEMAS, name);
}

/** Parses client bytes into events, each checked against its schema and its frame name. */
export function readEvents(bytes: Uint8Array): SeenEvent[] {
  const scanner = new SseFrameScanner();
  const frames = scanner.push(bytes);
  expect(scanner.midFrame).toBe(false);
  return frames.map((frame) => {
    const name = frame.event ?? "";
    if (!isEventName(name)) throw new TypeError(`Unexpected event name "${name}"`);
    const data = parseJson(frame.data ?? "");
    if (!isJsonObject(data)) throw new TypeError(`Event ${name} has no JSON object`);
    const result = v.safeParse(EVENT_SCHEMAS[name], data);
    if (!result.success) throw new TypeError(`Invalid ${name} event ${frame.data}: ${v.summarize(result.issues)}`);
    return { event: name, data };
  });
}

/**
 * The event grammar: pings anywhere; message_start once, first of the rest; blocks one at a
 * time with indices from 0 and deltas of the open block's kind; then either message_delta +
 * message_stop, or an error after which nothing follows.
 */
export function checkGrammar(events: readonly SeenEvent[]): void {
  const rest = events.filter((e) => e.event !== "ping");
  let started = false;
  let open: string | undefined;
  let next = 0;
  for (const [position, { event, data }] of rest.entries()) {
    const last = position === rest.length - 1;
    if (event === "error") {
      expect({ open, last }).toEqual({ open: undefined, last: true });
      return;
    }
    expect(started).toBe(event !== "message_start");
    if (event === "message_start") started = true;
    if (event === "content_block_start") {
      expect({ open, index: data["index"] }).toEqual({ open: undefined, index: next++ });
      open = typeOf(data["content_block"]);
    }
    if (event === "content_block_delta") {
      expect(data["index"]).toBe(next - 1);
      expect(deltaKind(data)).toBe(open);
    }
    if (event === "content_block_stop") {
      expect({ open: open !== undefined, index: data["index"] }).toEqual({ open: true, index: next - 1 });
      open = undefined;
    }
    if (event === "message_delta") expect({ open, next: rest[position + 1]?.event }).toEqual({ open: undefined, next: "message_stop" });
    if (event === "message_stop") expect({ last, previous: rest[position - 1]?.event }).toEqual({ last: true, previous: "message_delta" });
  }
  expect(rest.at(-1)?.event).toBe("message_stop");
}

const KIND_OF_DELTA: Readonly<Record<string, string>> = {
  text_delta: "text",
  thinking_delta: "thinking",
  input_json_delta: "tool_use",
};

function typeOf(value: JsonValue | undefined): string | undefined {
  return isJsonObject(value) && typeof value["type"] === "string" ? value["type"] : undefined;
}

function deltaKind(data: JsonObject): string | undefined {
  const type = typeOf(data["delta"]);
  return type === undefined ? undefined : KIND_OF_DELTA[type];
}

const encoder = new TextEncoder();

/** Ids counting from 1, so expected events can be written out. */
export function counterIds(): { newMessageId: () => string; newToolUseId: () => string } {
  let messages = 0;
  let tools = 0;
  return { newMessageId: () => `msg_${++messages}`, newToolUseId: () => `toolu_${++tools}` };
}

export async function fixtureBytes(name: string): Promise<Uint8Array> {
  const url = new URL(`../../test/fixtures/anthropic/${name}`, import.meta.url);
  return new Uint8Array(await Bun.file(url).arrayBuffer());
}

/** OpenAI chat SSE for inline cases: each object one `data:` frame, then [DONE] unless told. */
export function chatSse(chunks: readonly object[], done = true): Uint8Array {
  const frames = chunks.map((chunk) => `data: ${JSON.stringify({ model: "glm", ...chunk })}\n\n`);
  return encoder.encode(frames.join("") + (done ? "data: [DONE]\n\n" : ""));
}

export function pieces(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}
