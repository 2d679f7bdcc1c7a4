import { describe, expect, test } from "bun:test";
import type { JsonObject } from "../json/json.ts";
import { toChatRequest } from "./anthropic-request.ts";

const base = { model: "m", max_tokens: 100 };
const user = <T>(content: T) => ({ role: "user", content });
const assistant = <T>(content: T) => ({ role: "assistant", content });
const convert = (extra: object): JsonObject => toChatRequest({ ...base, messages: [user("hi")], ...extra }, () => "toolu_fixed");
const messagesOf = (...messages: unknown[]) => convert({ messages })["messages"];

describe("request fields", () => {
  test("model, max_tokens and the stream flag become their chat fields; nothing else is added", () => {
    expect(convert({})).toEqual({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      max_completion_tokens: 100,
      stream: false,
    });
  });

  test("sampling parameters and stop sequences are copied", () => {
    const chat = convert({ temperature: 0.5, top_p: 0.9, top_k: 0, stop_sequences: ["###", "END"] });
    expect(chat).toMatchObject({ temperature: 0.5, top_p: 0.9, top_k: 0, stop: ["###", "END"] });
    expect(convert({ stop_sequences: [] })).not.toHaveProperty("stop");
  });

  test("a streamed request asks for usage on every chunk", () => {
    const chat = convert({ stream: true });
    expect(chat).toMatchObject({ stream: true, stream_options: { include_usage: true, continuous_usage_stats: true } });
  });

  test("fields with no chat equivalent are accepted and dropped", () => {
    const extra = { metadata: { user_id: "u" }, betas: ["x"], service_tier: "auto", container: null, mcp_servers: [] };
    expect(Object.keys(convert(extra)).toSorted()).toEqual(["max_completion_tokens", "messages", "model", "stream"]);
  });
});

describe("system prompt", () => {
  test("system text and leading system messages become one system message joined by a blank line", () => {
    const chat = convert({
      system: [
        { type: "text", text: "A", cache_control: { type: "ephemeral" } },
        { type: "text", text: "B" },
      ],
      messages: [{ role: "system", content: "C" }, { role: "system", content: [{ type: "text", text: "D" }] }, user("hi")],
    });
    expect(chat["messages"]).toEqual([
      { role: "system", content: "A\n\nB\n\nC\n\nD" },
      { role: "user", content: "hi" },
    ]);
  });

  test("a Claude Code billing line is dropped only as the first system block", () => {
    const billing = "x-anthropic-billing-header: cc_version=2.1.37.e4f; cc_entrypoint=sdk-py; cc_is_subagent=true;";
    const first = convert({
      system: [
        { type: "text", text: billing },
        { type: "text", text: "Be brief." },
      ],
    });
    expect(first["messages"]).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "hi" },
    ]);
    const second = convert({
      system: [
        { type: "text", text: "Be brief." },
        { type: "text", text: billing },
      ],
    });
    expect(second["messages"]).toEqual([
      { role: "system", content: `Be brief.\n\n${billing}` },
      { role: "user", content: "hi" },
    ]);
  });

  test("a system message later in the history stays where it is", () => {
    const messages = messagesOf(user("a"), { role: "system", content: "reminder" }, user("b"));
    expect(messages).toEqual([user("a"), { role: "system", content: "reminder" }, user("b")]);
  });
});

describe("content blocks", () => {
  test("text and images become parts; base64 images become data URLs", () => {
    const messages = messagesOf(
      user([
        { type: "text", text: "look", cache_control: { type: "ephemeral" } },
        { type: "image", source: { type: "url", url: "https://example.com/cat.png" } },
        { type: "image", source: { type: "base64", media_type: "image/jpeg", data: "AAAA" } },
        { type: "image", source: { type: "base64", data: "BBBB" } },
      ]),
    );
    expect(messages).toEqual([
      {
        role: "user",
        content: [
          { type: "text", text: "look" },
          { type: "image_url", image_url: { url: "https://example.com/cat.png" } },
          { type: "image_url", image_url: { url: "data:image/jpeg;base64,AAAA" } },
          { type: "image_url", image_url: { url: "data:image/png;base64,BBBB" } },
        ],
      },
    ]);
  });

  test("assistant tool_use becomes tool_calls with JSON-string arguments, text joined, thinking as reasoning", () => {
    const messages = messagesOf(
      user("go"),
      assistant([
        { type: "thinking", thinking: "plan", signature: "sig" },
        { type: "text", text: "Checking" },
        { type: "text", text: " now." },
        { type: "tool_use", id: "toolu_1", name: "weather", input: { city: "Paris", days: 2 } },
        { type: "tool_use", name: "time", input: {} },
      ]),
    );
    expect(messages).toEqual([
      user("go"),
      {
        role: "assistant",
        content: "Checking now.",
        tool_calls: [
          { id: "toolu_1", type: "function", function: { name: "weather", arguments: '{"city":"Paris","days":2}' } },
          { id: "toolu_fixed", type: "function", function: { name: "time", arguments: "{}" } },
        ],
        reasoning: "plan",
      },
    ]);
  });

  test("an assistant turn of tool calls only has null content", () => {
    const messages = messagesOf(user("go"), assistant([{ type: "tool_use", id: "t", name: "x", input: {} }]));
    expect(Array.isArray(messages) && messages[1]).toMatchObject({ role: "assistant", content: null });
  });

  test("assistant thinking becomes reasoning on its message, or on a content-less one", () => {
    const withText = messagesOf(
      assistant([
        { type: "thinking", thinking: "a" },
        { type: "thinking", thinking: "b" },
        { type: "text", text: "hi" },
      ]),
    );
    expect(withText).toEqual([{ role: "assistant", content: [{ type: "text", text: "hi" }], reasoning: "ab" }]);
    const alone = messagesOf(assistant([{ type: "thinking", thinking: "only" }]));
    expect(alone).toEqual([{ role: "assistant", content: null, reasoning: "only" }]);
  });

  test("tool_result becomes a tool message placed between the parts around it", () => {
    const messages = messagesOf(
      user([
        { type: "text", text: "before" },
        { type: "tool_result", tool_use_id: "t1", content: "42" },
        {
          type: "tool_result",
          tool_use_id: "t2",
          content: [
            { type: "text", text: "a" },
            { type: "text", text: "b" },
          ],
        },
        { type: "tool_result", tool_use_id: "t3", content: "boom", is_error: true },
        { type: "tool_result", tool_use_id: "t4" },
        { type: "text", text: "after" },
      ]),
    );
    expect(messages).toEqual([
      { role: "user", content: [{ type: "text", text: "before" }] },
      { role: "tool", tool_call_id: "t1", content: "42" },
      { role: "tool", tool_call_id: "t2", content: "a\nb" },
      { role: "tool", tool_call_id: "t3", content: "Tool execution failed: boom" },
      { role: "tool", tool_call_id: "t4", content: "" },
      { role: "user", content: [{ type: "text", text: "after" }] },
    ]);
  });
});
