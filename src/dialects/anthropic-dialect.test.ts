import { describe, expect, test } from "bun:test";
import type { JsonObject } from "../json/json.ts";
import { concatBytes } from "../bytes.ts";
import type { DialectStream } from "../streaming/dialect.ts";
import { anthropicStream } from "./anthropic-dialect.ts";
import { chatSse, checkGrammar, counterIds, fixtureBytes, pieces, readEvents, type SeenEvent } from "./anthropic-test-events.ts";

function start(): DialectStream {
  return anthropicStream(counterIds());
}

/** Relays `bytes` in pieces of `size`, ends the upstream, and returns the client bytes. */
function relay(bytes: Uint8Array, size = bytes.length): Uint8Array {
  const stream = start();
  const out = pieces(bytes, size).flatMap((piece) => stream.push(piece) ?? []);
  const tail = stream.end();
  expect(tail).toBeUndefined();
  return concatBytes(out) ?? new Uint8Array(0);
}

function eventsOf(bytes: Uint8Array): SeenEvent[] {
  const events = readEvents(bytes);
  checkGrammar(events);
  return events;
}

const FIXTURES = ["text.sse", "reasoning-text.sse", "tool-single.sse", "tool-parallel.sse"];
const delta = (index: number, d: JsonObject) => ({
  event: "content_block_delta",
  data: { type: "content_block_delta", index, delta: d },
});
const block = (index: number, b: JsonObject) => ({
  event: "content_block_start",
  data: { type: "content_block_start", index, content_block: b },
});
const stop = (index: number) => ({ event: "content_block_stop", data: { type: "content_block_stop", index } });
const ending = (d: JsonObject, usage: JsonObject) => [
  { event: "message_delta", data: { type: "message_delta", delta: d, usage } },
  { event: "message_stop", data: { type: "message_stop" } },
];
const json = (partial: string) => ({ type: "input_json_delta", partial_json: partial });
const call = (index: number, fields: object) => ({ choices: [{ delta: { tool_calls: [{ index, ...fields }] } }] });
const unindexed = (fields: object) => ({ choices: [{ delta: { tool_calls: [fields] } }] });
const opening = (usage: JsonObject) => ({
  event: "message_start",
  data: {
    type: "message_start",
    message: { id: "msg_1", type: "message", role: "assistant", model: "glm-4.6", content: [], usage },
  },
});

describe("reframing", () => {
  test("a text answer", async () => {
    expect(eventsOf(relay(await fixtureBytes("text.sse")))).toEqual([
      opening({ input_tokens: 42, output_tokens: 0 }),
      block(0, { type: "text", text: "" }),
      delta(0, { type: "text_delta", text: "Hello" }),
      delta(0, { type: "text_delta", text: ", héllo 世界 🎉" }),
      stop(0),
      ...ending({ stop_reason: "end_turn" }, { input_tokens: 42, output_tokens: 3 }),
    ]);
  });

  test("reasoning then text, cached tokens and a matched stop sequence; events after [DONE] ignored", async () => {
    expect(eventsOf(relay(await fixtureBytes("reasoning-text.sse")))).toEqual([
      opening({ input_tokens: 40, output_tokens: 0, cache_read_input_tokens: 960 }),
      block(0, { type: "thinking", thinking: "" }),
      delta(0, { type: "thinking_delta", thinking: "The user wants " }),
      delta(0, { type: "thinking_delta", thinking: "a haiku." }),
      stop(0),
      block(1, { type: "text", text: "" }),
      delta(1, { type: "text_delta", text: "Autumn moonlight—" }),
      delta(1, { type: "text_delta", text: "\na worm digs silently" }),
      stop(1),
      ...ending(
        { stop_reason: "stop_sequence", stop_sequence: "###" },
        { input_tokens: 40, output_tokens: 5, cache_read_input_tokens: 960 },
      ),
    ]);
  });

  test("a single tool call streams its arguments in a tool_use block", async () => {
    expect(eventsOf(relay(await fixtureBytes("tool-single.sse")))).toEqual([
      opening({ input_tokens: 300, output_tokens: 0 }),
      block(0, { type: "text", text: "" }),
      delta(0, { type: "text_delta", text: "Let me check." }),
      stop(0),
      block(1, { type: "tool_use", id: "call_abc", name: "Read", input: {} }),
      delta(1, { type: "input_json_delta", partial_json: '{"file_' }),
      delta(1, { type: "input_json_delta", partial_json: 'path": "/a.ts"}' }),
      stop(1),
      ...ending({ stop_reason: "tool_use" }, { input_tokens: 300, output_tokens: 7 }),
    ]);
  });

  test("interleaved parallel tool calls are serialised, each keeping exactly its own fragments", async () => {
    expect(eventsOf(relay(await fixtureBytes("tool-parallel.sse")))).toEqual([
      opening({ input_tokens: 500, output_tokens: 0 }),
      block(0, { type: "tool_use", id: "call_a", name: "Glob", input: {} }),
      delta(0, json('{"pat')),
      delta(0, json('tern": "*.ts"')),
      delta(0, json("}")),
      stop(0),
      block(1, { type: "tool_use", id: "call_b", name: "Grep", input: {} }),
      delta(1, json('{"pattern"')),
      delta(1, json(': "TODO"')),
      delta(1, json("}")),
      stop(1),
      block(2, { type: "tool_use", id: "toolu_1", name: "Read", input: {} }),
      delta(2, json('{"file_path": "/x"}')),
      stop(2),
      ...ending({ stop_reason: "tool_use" }, { input_tokens: 500, output_tokens: 6 }),
    ]);
  });

  test("a call waiting for the open block gets its own block before text opens", () => {
    const bytes = chatSse([
      call(0, { id: "a", function: { name: "A", arguments: "{}" } }),
      call(1, { id: "b", function: { name: "B", arguments: "{" } }),
      call(1, { function: { arguments: "}" } }),
      { choices: [{ delta: { content: "done" }, finish_reason: "length" }] },
    ]);
    const kinds = eventsOf(relay(bytes)).map(({ data }) => [data["type"], data["index"] ?? null]);
    expect(kinds).toEqual([
      ["message_start", null],
      ["content_block_start", 0],
      ["content_block_delta", 0],
      ["content_block_stop", 0],
      ["content_block_start", 1],
      ["content_block_delta", 1],
      ["content_block_delta", 1],
      ["content_block_stop", 1],
      ["content_block_start", 2],
      ["content_block_delta", 2],
      ["content_block_stop", 2],
      ["message_delta", null],
      ["message_stop", null],
    ]);
    expect(eventsOf(relay(bytes)).at(-2)?.data["delta"]).toEqual({ stop_reason: "max_tokens" });
  });

  test("calls without an index are told apart by their names", () => {
    const bytes = chatSse([
      unindexed({ function: { name: "A", arguments: '{"a":' } }),
      unindexed({ function: { arguments: "1}" } }),
      unindexed({ function: { name: "B" } }),
    ]);
    const starts = eventsOf(relay(bytes)).filter((e) => e.event === "content_block_start");
    expect(starts.map((e) => e.data["content_block"])).toEqual([
      { type: "tool_use", id: "toolu_1", name: "A", input: {} },
      { type: "tool_use", id: "toolu_2", name: "B", input: {} },
    ]);
  });

  test("a stream of [DONE] alone is a complete empty message", () => {
    const names = eventsOf(relay(new TextEncoder().encode("data: [DONE]\n\n"))).map((e) => e.event);
    expect(names).toEqual(["message_start", "message_delta", "message_stop"]);
  });

  for (const name of FIXTURES) {
    test(`${name} split at 1, 7 and 4096 bytes gives identical bytes`, async () => {
      const bytes = await fixtureBytes(name);
      const whole = relay(bytes);
      eventsOf(whole);
      for (const size of [1, 7, 4096]) expect(relay(bytes, size)).toEqual(whole);
    });
  }
});

describe("keepalive", () => {
  test("is a ping event, before message_start too, and nothing once the message ended", async () => {
    const stream = start();
    expect(stream.opening()).toBeUndefined();
    const ping = stream.keepalive();
    expect(new TextDecoder().decode(ping)).toBe('event: ping\ndata: {"type":"ping"}\n\n');
    const [first, ...rest] = pieces(await fixtureBytes("text.sse"), 300);
    const out = [
      ping ?? new Uint8Array(0),
      stream.push(first ?? new Uint8Array(0)) ?? new Uint8Array(0),
      stream.keepalive() ?? new Uint8Array(0),
    ];
    for (const piece of rest) out.push(stream.push(piece) ?? new Uint8Array(0));
    expect(stream.keepalive()).toBeUndefined();
    const events = eventsOf(concatBytes(out) ?? new Uint8Array(0));
    expect(events.filter((e) => e.event === "ping")).toHaveLength(2);
  });
});
