import { describe, expect, test } from "bun:test";
import type { JsonObject } from "../json/json.ts";
import { toChatRequest, toCountTokensRequest } from "./anthropic-request.ts";

const base = { model: "m", max_tokens: 100 };
const user = <T>(content: T) => ({ role: "user", content });
const convert = (extra: object): JsonObject => toChatRequest({ ...base, messages: [user("hi")], ...extra }, () => "toolu_fixed");
const weatherTool = { name: "weather", description: "Weather now", input_schema: { type: "object" } };

describe("tools and tool_choice", () => {
  test("client tools become function tools, strict kept, client-only fields dropped; choice defaults to auto", () => {
    const tools = [
      { ...weatherTool, strict: true, defer_loading: true, cache_control: { type: "ephemeral" } },
      { name: "t", input_schema: {} },
    ];
    expect(convert({ tools })).toMatchObject({
      tools: [
        {
          type: "function",
          function: { name: "weather", description: "Weather now", parameters: { type: "object" }, strict: true },
        },
        { type: "function", function: { name: "t", parameters: {} } },
      ],
      tool_choice: "auto",
    });
  });

  test("tool_choice auto and none map through; none keeps the client tools and drops server tools", () => {
    expect(convert({ tools: [weatherTool], tool_choice: { type: "auto" } })["tool_choice"]).toBe("auto");
    const none = convert({
      tools: [weatherTool, { type: "web_search_20250305", name: "web_search" }],
      tool_choice: { type: "none" },
    });
    expect(none).toMatchObject({ tool_choice: "none", tools: [{ function: { name: "weather" } }] });
    expect(none["tools"]).toHaveLength(1);
    expect(convert({ tool_choice: { type: "none", disable_parallel_tool_use: true } })["tool_choice"]).toBe("none");
  });
});

describe("thinking and template kwargs", () => {
  test("enabled thinking sets enable_thinking and the budget", () => {
    const chat = convert({
      max_tokens: 32000,
      thinking: { type: "enabled", budget_tokens: 31999, display: "omitted" },
    });
    expect(chat).toMatchObject({
      thinking_token_budget: 31999,
      chat_template_kwargs: { enable_thinking: true },
      injected_chat_template_kwargs: ["enable_thinking"],
    });
  });

  test("disabled and adaptive thinking only switch the template", () => {
    expect(convert({ thinking: { type: "disabled" } })["chat_template_kwargs"]).toEqual({ enable_thinking: false });
    const adaptive = convert({ thinking: { type: "adaptive", display: "summarized" } });
    expect(adaptive["chat_template_kwargs"]).toEqual({ enable_thinking: true });
    expect(adaptive).not.toHaveProperty("thinking_token_budget");
  });

  test("output_config effort and format map to reasoning_effort and response_format", () => {
    const schema = { type: "object", properties: { a: { type: "string" } } };
    const chat = convert({ output_config: { effort: "high", format: { type: "json_schema", schema } } });
    expect(chat).toMatchObject({
      chat_template_kwargs: { reasoning_effort: "high" },
      response_format: { type: "json_schema", json_schema: { schema } },
    });
  });

  test("a keep-all clear_thinking edit keeps earlier reasoning; other policies leave the default", () => {
    const keepAll = convert({
      thinking: { type: "adaptive" },
      context_management: { edits: [{ type: "clear_thinking_20251015", keep: "all" }] },
    });
    expect(keepAll["chat_template_kwargs"]).toEqual({
      enable_thinking: true,
      clear_thinking: false,
      drop_thinking: false,
    });
    expect(keepAll["injected_chat_template_kwargs"]).toEqual(["clear_thinking", "drop_thinking", "enable_thinking"]);
    const keepSome = convert({
      context_management: { edits: [{ type: "clear_thinking_20251015", keep: { type: "thinking_turns", value: 1 } }] },
    });
    expect(keepSome).not.toHaveProperty("chat_template_kwargs");
  });
});

describe("count_tokens", () => {
  test("converts the prompt with max_tokens 1 and no generation controls", () => {
    const chat = toCountTokensRequest({
      model: "m",
      messages: [user("hi")],
      stream: true,
      temperature: 0.2,
      max_tokens: 7,
    });
    expect(chat).toEqual({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      max_completion_tokens: 1,
      stream: false,
    });
  });

  test("an enabled thinking budget raises max_tokens just above it", () => {
    const chat = toCountTokensRequest({
      model: "m",
      messages: [user("hi")],
      thinking: { type: "enabled", budget_tokens: 2048 },
    });
    expect(chat).toMatchObject({ max_completion_tokens: 2049, thinking_token_budget: 2048 });
  });

  test("an invalid prompt is refused as for Messages", () => {
    expect(() => toCountTokensRequest({ model: "m", messages: [] })).toThrow("messages must not be empty");
  });
});
