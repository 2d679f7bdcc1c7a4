import { describe, expect, test } from "bun:test";
import { ProxyError } from "../errors.ts";
import { toChatRequest } from "./anthropic-request.ts";

const base = { model: "m", max_tokens: 100, messages: [{ role: "user", content: "hi" }] };
const weather = { name: "weather", input_schema: { type: "object" } };
const webSearch = { type: "web_search_20250305", name: "web_search" };

function rejection(body: unknown): ProxyError {
  try {
    toChatRequest(body);
  } catch (error) {
    if (error instanceof ProxyError) return error;
    throw error;
  }
  throw new Error("Expected the request to be refused");
}

function expectRefused(body: unknown, message: string | RegExp): void {
  const error = rejection(body);
  expect({ code: error.code, status: error.status }).toEqual({ code: "BAD_REQUEST", status: 400 });
  expect(error.message).toMatch(message);
}

const withBlocks = (role: string, content: unknown[]) => ({ ...base, messages: [{ role, content }] });

describe("refused content", () => {
  const cases: [string, unknown, RegExp][] = [
    [
      "redacted_thinking",
      withBlocks("assistant", [{ type: "redacted_thinking", data: "xx" }]),
      /redacted_thinking history is not supported/,
    ],
    ["an unknown block type", withBlocks("user", [{ type: "search_result", source: "s" }]), /block type 'search_result' is not supported/],
    [
      "thinking in a user message",
      withBlocks("user", [{ type: "thinking", thinking: "t" }]),
      /thinking content blocks are only valid in assistant messages/,
    ],
    [
      "tool_use in a user message",
      withBlocks("user", [{ type: "tool_use", id: "t", name: "x", input: {} }]),
      /tool_use content blocks are only valid in assistant messages, not 'user'/,
    ],
    [
      "an image inside a tool_result",
      withBlocks("user", [{ type: "tool_result", tool_use_id: "t", content: [{ type: "image", source: { type: "url", url: "u" } }] }]),
      /Content block type 'image' inside tool_result is not supported/,
    ],
    [
      "an image beside tool_use",
      withBlocks("assistant", [
        { type: "image", source: { type: "url", url: "u" } },
        { type: "tool_use", id: "t", name: "x", input: {} },
      ]),
      /combining tool_use with image content/,
    ],
    ["an image with neither url nor data", withBlocks("user", [{ type: "image", source: { type: "base64" } }]), /has no url or data/],
    [
      "an image with an unknown source type",
      withBlocks("user", [{ type: "image", source: { type: "file", file_id: "f" } }]),
      /messages\.0\.content\.0\.source\.type/,
    ],
    ["a text block without text", withBlocks("user", [{ type: "text" }]), /^messages\.0\.content\.0\.text: Field required$/],
    [
      "tool_use input that is not an object",
      withBlocks("assistant", [{ type: "tool_use", id: "t", name: "x", input: [1] }]),
      /messages\.0\.content\.0\.input/,
    ],
    ["messages whose content is all empty", { ...base, messages: [{ role: "user", content: [] }] }, /messages must not be empty/],
    ["a bad role", withBlocks("tool", [{ type: "text", text: "x" }]), /messages\.0\.role/],
  ];
  for (const [what, body, message] of cases) test(`refuses ${what}`, () => expectRefused(body, message));
});

describe("refused tools", () => {
  const cases: [string, object, RegExp][] = [
    ["a server tool", { tools: [webSearch] }, /server tool 'web_search' \(type='web_search_20250305'\) is not supported/],
    ["a server tool under tool_choice auto", { tools: [weather, webSearch], tool_choice: { type: "auto" } }, /server tool 'web_search'/],
    ["an MCP toolset", { tools: [{ type: "mcp_toolset", name: "mcp" }] }, /server tool 'mcp'/],
    ["a client tool without input_schema", { tools: [{ name: "x" }] }, /Client tool 'x' requires input_schema/],
    ["a schema client tool", { tools: [{ type: "bash_20250124", name: "bash" }] }, /schema client tool 'bash'.*not implemented/],
    ["tool_choice any", { tools: [weather], tool_choice: { type: "any" } }, /tool_choice type 'any' is not supported/],
    ["tool_choice tool", { tools: [weather], tool_choice: { type: "tool", name: "weather" } }, /tool_choice type 'tool' is not supported/],
    ["tool_choice tool without a name", { tools: [weather], tool_choice: { type: "tool" } }, /requires a 'name'/],
    ["tool_choice tool naming an unknown tool", { tools: [weather], tool_choice: { type: "tool", name: "nope" } }, /unknown tool 'nope'/],
    ["tool_choice with no tools", { tool_choice: { type: "auto" } }, /requires at least one client-executable tool/],
    [
      "disable_parallel_tool_use",
      { tools: [weather], tool_choice: { type: "auto", disable_parallel_tool_use: true } },
      /disable_parallel_tool_use=true is not supported/,
    ],
    ["an unknown tool_choice type", { tools: [weather], tool_choice: { type: "required" } }, /^tool_choice\.type: /],
  ];
  for (const [what, extra, message] of cases) test(`refuses ${what}`, () => expectRefused({ ...base, ...extra }, message));
});

describe("refused parameters", () => {
  const cases: [string, object, RegExp][] = [
    ["a budget below 1024", { thinking: { type: "enabled", budget_tokens: 1023 } }, /budget_tokens must be at least 1024/],
    [
      "a budget not below max_tokens",
      { max_tokens: 2000, thinking: { type: "enabled", budget_tokens: 2000 } },
      /budget_tokens must be less than max_tokens/,
    ],
    ["enabled thinking without a budget", { thinking: { type: "enabled" } }, /^thinking\.budget_tokens: Field required$/],
    ["a budget on adaptive thinking", { thinking: { type: "adaptive", budget_tokens: 4096 } }, /only valid with thinking type 'enabled'/],
    ["an unknown thinking type", { thinking: { type: "auto" } }, /^thinking\.type: /],
    ["a format that is not an object", { output_config: { format: "json" } }, /output_config\.format must be an object/],
    [
      "a format other than json_schema",
      { output_config: { format: { type: "regex", schema: {} } } },
      /Only output_config\.format type 'json_schema'/,
    ],
    [
      "a json_schema format without a schema",
      { output_config: { format: { type: "json_schema" } } },
      /output_config\.format\.schema must be an object/,
    ],
    ["max_tokens below 1", { max_tokens: 0 }, /max_tokens must be at least 1/],
    ["a fractional max_tokens", { max_tokens: 1.5 }, /^max_tokens: /],
    ["a missing max_tokens", { max_tokens: undefined }, /^max_tokens: Field required$/],
    ["a missing model", { model: undefined }, /^model: Field required$/],
    ["no messages", { messages: [] }, /messages must not be empty/],
    ["temperature above 1", { temperature: 1.5 }, /^temperature: /],
    ["top_p below 0", { top_p: -0.1 }, /^top_p: /],
    ["a negative top_k", { top_k: -1 }, /^top_k: /],
    ["stop_sequences that are not strings", { stop_sequences: [1] }, /^stop_sequences\.0: /],
    ["a system block that is not text", { system: [{ type: "image", source: {} }] }, /^system/],
  ];
  for (const [what, extra, message] of cases) test(`refuses ${what}`, () => expectRefused({ ...base, ...extra }, message));

  test("refuses a body that is not an object", () => {
    for (const body of [null, "x", [], 3]) expectRefused(body, /.+/);
  });
});
