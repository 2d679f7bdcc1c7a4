import { describe, expect, test } from "bun:test";
import { checkGrammar, readEvents } from "./anthropic-test-events.ts";

const encoder = new TextEncoder();
const event = (type: string, data: object = {}) => `event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`;
const usage = { input_tokens: 1, output_tokens: 0 };
const start = event("message_start", {
  message: { id: "msg_1", type: "message", role: "assistant", model: "m", content: [], usage },
});
const textBlock = event("content_block_start", { index: 0, content_block: { type: "text", text: "" } });
const textDelta = (index: number) => event("content_block_delta", { index, delta: { type: "text_delta", text: "x" } });
const ending = event("message_delta", { delta: { stop_reason: "end_turn" }, usage }) + event("message_stop");
const check = (text: string) => checkGrammar(readEvents(encoder.encode(text)));

describe("the Anthropic event checker", () => {
  test("accepts a complete message, pings anywhere, and an error that ends the stream", () => {
    check(event("ping") + start + textBlock + event("ping") + textDelta(0) + event("content_block_stop", { index: 0 }) + ending);
    check(event("ping") + event("error", { error: { type: "api_error", message: "x" } }));
  });

  test("refuses events out of order", () => {
    expect(() => check(start + textDelta(0) + ending)).toThrow();
    expect(() => check(start + event("content_block_start", { index: 1, content_block: { type: "text", text: "" } }))).toThrow();
    expect(() => check(start + textBlock + event("message_stop"))).toThrow();
    expect(() => check(start + textBlock + ending)).toThrow();
    expect(() => check(start)).toThrow();
    expect(() => check(textBlock + start)).toThrow();
  });

  test("refuses null fields, unknown fields and unknown events", () => {
    const nullStop = event("message_delta", { delta: { stop_reason: "end_turn", stop_sequence: null }, usage });
    expect(() => readEvents(encoder.encode(nullStop))).toThrow();
    expect(() => readEvents(encoder.encode(event("ping", { extra: 1 })))).toThrow();
    expect(() => readEvents(encoder.encode(event("message_finished")))).toThrow();
  });
});
