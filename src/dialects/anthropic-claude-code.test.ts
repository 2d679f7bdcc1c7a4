import { describe, expect, test } from "bun:test";
import { isJsonObject, type JsonObject, type JsonValue, parseJson } from "../json/json.ts";
import { toChatRequest, toCountTokensRequest } from "./anthropic-request.ts";

const FIXTURE = new URL("../../test/fixtures/anthropic/claude-code-request.json", import.meta.url);
const text = await Bun.file(FIXTURE).text();

function body(): JsonObject {
  const parsed = parseJson(text);
  if (!isJsonObject(parsed)) throw new TypeError("fixture is not an object");
  return parsed;
}

function objects(value: JsonValue | undefined): JsonObject[] {
  return Array.isArray(value) ? value.filter(isJsonObject) : [];
}

// Fields a TRT-LLM chat worker knows; it rejects any other (extra="forbid").
const CHAT_FIELDS = new Set([
  "model",
  "messages",
  "max_completion_tokens",
  "stream",
  "stream_options",
  "tools",
  "tool_choice",
  "thinking_token_budget",
  "chat_template_kwargs",
  "injected_chat_template_kwargs",
]);

describe("a Claude Code 2.1 request", () => {
  test("is about 80 KB, as real ones are", () => {
    expect(text.length).toBeGreaterThan(78_000);
  });

  test("is accepted as it is and becomes a chat request of known fields only", () => {
    const chat = toChatRequest(body());
    expect(Object.keys(chat).filter((key) => !CHAT_FIELDS.has(key))).toEqual([]);
    expect(chat).toMatchObject({
      model: "claude-sonnet-4-5-20250929",
      max_completion_tokens: 32000,
      stream: true,
      stream_options: { include_usage: true, continuous_usage_stats: true },
      thinking_token_budget: 31999,
      tool_choice: "auto",
      chat_template_kwargs: { enable_thinking: true, clear_thinking: false, drop_thinking: false },
      injected_chat_template_kwargs: ["clear_thinking", "drop_thinking", "enable_thinking"],
    });
  });

  test("loses its billing line but keeps the rest of the system prompt first", () => {
    const [system] = objects(toChatRequest(body())["messages"]);
    expect(system?.["role"]).toBe("system");
    const content = system?.["content"];
    if (typeof content !== "string") throw new TypeError("system content is not a string");
    expect(content.startsWith("You are Claude Code, Anthropic's official CLI for Claude.\n\nWhen a task")).toBe(true);
    expect(content).not.toContain("x-anthropic-billing-header");
  });

  test("keeps every client tool, deferred ones included, without Anthropic-only fields", () => {
    const tools = objects(toChatRequest(body())["tools"]);
    expect(tools).toHaveLength(objects(body()["tools"]).length);
    for (const tool of tools) {
      expect(Object.keys(tool).toSorted()).toEqual(["function", "type"]);
      const fn = tool["function"];
      expect(isJsonObject(fn) && Object.keys(fn).toSorted()).toEqual(["description", "name", "parameters"]);
    }
  });

  test("keeps the turn structure: reasoning, tool calls and tool results in order", () => {
    const roles = objects(toChatRequest(body())["messages"]).map((m) => [m["role"], "reasoning" in m, "tool_calls" in m]);
    expect(roles).toEqual([
      ["system", false, false],
      ["user", false, false],
      ["assistant", true, true],
      ["tool", false, false],
      ["assistant", true, true],
      ["tool", false, false],
      ["tool", false, false],
      ["user", false, false],
    ]);
  });

  test("is countable through count_tokens as it is", () => {
    expect(toCountTokensRequest(body())).toMatchObject({ max_completion_tokens: 32000, stream: false });
  });
});
