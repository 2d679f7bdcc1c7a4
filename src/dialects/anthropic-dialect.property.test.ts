/**
 * Property tests of the Anthropic dialect over random valid chat streams: text, reasoning
 * (`reasoning_content` or `reasoning`) and up to four tool calls whose argument fragments
 * interleave with each other and with text, any finish reason, with or without usage — cut
 * into random chunks, with pings at random chunk boundaries.
 */
import { describe, expect, test } from "bun:test";
import * as fc from "fast-check";
import { isJsonObject, type JsonObject } from "../json/json.ts";
import { concatBytes } from "../bytes.ts";
import type { DialectStream } from "../streaming/dialect.ts";
import { anthropicStream } from "./anthropic-dialect.ts";
import { chatSse, checkGrammar, counterIds, readEvents, type SeenEvent } from "./anthropic-test-events.ts";

// Generous: CI machines are shared, and bun test allows 5 s per test by default.
const TIMEOUT_MS = 30_000;
const RUNS = 1500;

type Step =
  | { readonly kind: "text"; readonly text: string }
  | { readonly kind: "reasoning"; readonly text: string; readonly field: "reasoning_content" | "reasoning" }
  | { readonly kind: "tools"; readonly calls: readonly { readonly index: number; readonly fragment: string }[] };

const anyText = fc.string({ unit: "grapheme", maxLength: 12 });
const step: fc.Arbitrary<Step> = fc.oneof(
  fc.record({ kind: fc.constant("text" as const), text: anyText }),
  fc.record({
    kind: fc.constant("reasoning" as const),
    text: anyText,
    field: fc.constantFrom("reasoning_content" as const, "reasoning" as const),
  }),
  fc.record({
    kind: fc.constant("tools" as const),
    calls: fc.array(fc.record({ index: fc.nat({ max: 3 }), fragment: anyText }), { minLength: 1, maxLength: 3 }),
  }),
);

interface ChatStream {
  readonly steps: readonly Step[];
  readonly finish: "stop" | "length" | "tool_calls";
  readonly usage: boolean;
}

const chatStream: fc.Arbitrary<ChatStream> = fc.record({
  steps: fc.array(step, { maxLength: 10 }),
  finish: fc.constantFrom("stop", "length", "tool_calls"),
  usage: fc.boolean(),
});

/** The worker's chat SSE: a tool call's first fragment carries its id and name. */
function encode({ steps, finish, usage }: ChatStream): Uint8Array {
  const named = new Set<number>();
  const chunks: object[] = steps.map((s) => {
    if (s.kind === "text") return { choices: [{ index: 0, delta: { content: s.text } }] };
    if (s.kind === "reasoning") return { choices: [{ index: 0, delta: { [s.field]: s.text } }] };
    const toolCalls = s.calls.map(({ index, fragment }) => {
      const first = !named.has(index);
      named.add(index);
      return first
        ? { index, id: `call_${index}`, type: "function", function: { name: `tool_${index}`, arguments: fragment } }
        : { index, function: { arguments: fragment } };
    });
    return { choices: [{ index: 0, delta: { tool_calls: toolCalls } }] };
  });
  const last: JsonObject = { choices: [{ index: 0, delta: {}, finish_reason: finish }] };
  if (usage) last["usage"] = { prompt_tokens: 7, completion_tokens: steps.length };
  return chatSse([...chunks, last]);
}

const cuts = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 20 });

function chunked(bytes: Uint8Array, fractions: readonly number[]): Uint8Array[] {
  const points = fractions.map((f) => Math.floor(f * bytes.length)).toSorted((a, b) => a - b);
  return [...points, bytes.length].map((point, i) => bytes.subarray(i === 0 ? 0 : (points[i - 1] ?? 0), point));
}

/** Client bytes; a ping is asked for after chunk i when pings[i]. */
function relay(chunks: readonly Uint8Array[], pings: readonly boolean[] = []): Uint8Array {
  const stream: DialectStream = anthropicStream(counterIds());
  const out: (Uint8Array | undefined)[] = [];
  for (const [i, chunk] of chunks.entries()) {
    out.push(stream.push(chunk));
    if (pings[i] === true) out.push(stream.keepalive());
  }
  expect(stream.end()).toBeUndefined();
  return concatBytes(out.filter((part) => part !== undefined)) ?? new Uint8Array(0);
}

/** The value when it is a string; a schema-valid event never has another kind here. */
function str(value: unknown): string {
  if (typeof value !== "string") throw new TypeError(`Expected a string, got ${JSON.stringify(value)}`);
  return value;
}

/** What each kind of block received, joined, per tool call id for tool_use blocks. */
function received(events: readonly SeenEvent[]): { text: string; thinking: string; tools: Map<string, string> } {
  const tools = new Map<string, string>();
  let text = "";
  let thinking = "";
  let toolId = "";
  for (const { event, data } of events) {
    const block = data["content_block"];
    if (event === "content_block_start" && isJsonObject(block) && block["type"] === "tool_use") {
      toolId = str(block["id"]);
      expect(block["name"]).toBe(`tool_${toolId.slice("call_".length)}`);
      tools.set(toolId, tools.get(toolId) ?? "");
    }
    const delta = data["delta"];
    if (event !== "content_block_delta" || !isJsonObject(delta)) continue;
    if (delta["type"] === "text_delta") text += str(delta["text"]);
    if (delta["type"] === "thinking_delta") thinking += str(delta["thinking"]);
    if (delta["type"] === "input_json_delta") tools.set(toolId, (tools.get(toolId) ?? "") + str(delta["partial_json"]));
  }
  return { text, thinking, tools };
}

function sent(steps: readonly Step[]): { text: string; thinking: string; tools: Map<string, string> } {
  const tools = new Map<string, string>();
  for (const s of steps)
    if (s.kind === "tools") for (const c of s.calls) tools.set(`call_${c.index}`, (tools.get(`call_${c.index}`) ?? "") + c.fragment);
  const join = (kind: "text" | "reasoning") => steps.map((s) => (s.kind === kind ? s.text : "")).join("");
  return { text: join("text"), thinking: join("reasoning"), tools };
}

describe("Anthropic dialect properties", () => {
  test(
    "any chunking of a valid chat stream, with pings anywhere, yields a schema-valid Anthropic event sequence",
    () => {
      fc.assert(
        fc.property(chatStream, cuts, fc.array(fc.boolean(), { maxLength: 21 }), (chat, fractions, pings) => {
          checkGrammar(readEvents(relay(chunked(encode(chat), fractions), pings)));
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );

  test(
    "any chunking gives the same client bytes as one chunk",
    () => {
      fc.assert(
        fc.property(chatStream, cuts, (chat, fractions) => {
          const bytes = encode(chat);
          expect(Buffer.from(relay(chunked(bytes, fractions))).equals(relay([bytes]))).toBe(true);
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );

  test(
    "every text, reasoning and tool-argument fragment reaches its block intact and in order",
    () => {
      fc.assert(
        fc.property(chatStream, cuts, (chat, fractions) => {
          const events = readEvents(relay(chunked(encode(chat), fractions)));
          expect(received(events)).toEqual(sent(chat.steps));
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );

  test(
    "the stop reason is max_tokens on length, else tool_use on tool_calls or once a tool block was sent, else end_turn",
    () => {
      fc.assert(
        fc.property(chatStream, (chat) => {
          const events = readEvents(relay([encode(chat)]));
          const delta = events.find((e) => e.event === "message_delta")?.data["delta"];
          const tools = chat.finish === "tool_calls" || chat.steps.some((s) => s.kind === "tools");
          const expected = chat.finish === "length" ? "max_tokens" : tools ? "tool_use" : "end_turn";
          expect(isJsonObject(delta) ? delta["stop_reason"] : undefined).toBe(expected);
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );
});
