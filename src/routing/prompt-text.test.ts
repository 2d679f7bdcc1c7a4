import { describe, expect, test } from "bun:test";
import type { JsonObject } from "../json/json.ts";
import { promptTextOf, promptTokenIdsOf, type PromptApi } from "./prompt-text.ts";
import { contentWeight, estimatedPromptTokens, routingRequestOf, withPromptTokenIds } from "./routing-request.ts";

describe("promptTextOf", () => {
  test("renders chat messages as role and content, one per line, tool calls included", () => {
    const body = {
      messages: [
        { role: "system", content: "Be brief." },
        {
          role: "user",
          content: [
            { type: "text", text: "Look:" },
            { type: "image_url", image_url: { url: "data:..." } },
          ],
        },
        { role: "assistant", content: null, tool_calls: [{ id: "c1", type: "function", function: { name: "get", arguments: '{"q":1}' } }] },
        { role: "tool", tool_call_id: "c1", content: "42" },
      ],
    };
    expect(promptTextOf("chat", body)).toBe('system:Be brief.\nuser:Look:\n[image_url]\nassistant:[tool_call get({"q":1})]\ntool:42');
  });

  test("a later chat turn starts with the text of the turn before, so prefixes match across turns", () => {
    const first = [
      { role: "system", content: "S" },
      { role: "user", content: "hi" },
    ];
    const second = [...first, { role: "assistant", content: "hello" }, { role: "user", content: "more" }];
    expect(promptTextOf("chat", { messages: second }).startsWith(promptTextOf("chat", { messages: first }))).toBe(true);
  });

  test("a completions prompt is its own text; a list of strings is joined; token ids give no text", () => {
    expect(promptTextOf("completions", { prompt: "once upon" })).toBe("once upon");
    expect(promptTextOf("completions", { prompt: ["a", "b"] })).toBe("a\nb");
    expect(promptTextOf("completions", { prompt: [1, 2, 3] })).toBe("");
  });

  test("a responses request renders its instructions, then its input items", () => {
    expect(promptTextOf("responses", { instructions: "Be kind.", input: "hello" })).toBe("system:Be kind.\nuser:hello");
    const input = [
      { role: "user", content: [{ type: "input_text", text: "weather?" }] },
      { type: "function_call", name: "weather", arguments: "{}", call_id: "c" },
      { type: "function_call_output", call_id: "c", output: "sunny" },
      { type: "reasoning", summary: [] },
    ];
    expect(promptTextOf("responses", { input })).toBe("user:weather?\nassistant:[tool_call weather({})]\ntool:sunny");
  });
});

describe("promptTokenIdsOf", () => {
  test("reads a completions prompt of token ids, alone or as a one-element list", () => {
    expect(promptTokenIdsOf("completions", { prompt: [5, 6, 7] })).toEqual([5, 6, 7]);
    expect(promptTokenIdsOf("completions", { prompt: [[5, 6]] })).toEqual([5, 6]);
    expect(promptTokenIdsOf("completions", { prompt: "text" })).toBeUndefined();
    expect(promptTokenIdsOf("completions", { prompt: [1, -2] })).toBeUndefined();
  });

  test("reads prompt_token_ids of chat and responses requests", () => {
    expect(promptTokenIdsOf("chat", { messages: [], prompt_token_ids: [1, 2] })).toEqual([1, 2]);
    expect(promptTokenIdsOf("responses", { input: "x" })).toBeUndefined();
  });

  test("routingRequestOf puts text, ids, the body and the caller's conversation id together", () => {
    const body = { prompt: [1, 2] };
    const request = routingRequestOf("completions", body, "conv");
    expect(request.body).toBe(body);
    // Text and ids are getters (built only when a router reads them): read one by one, not spread.
    const { conversationId, promptText, promptLength, promptTokenIds, promptTokenCount } = request;
    expect({ conversationId, promptText, promptLength, promptTokenIds, promptTokenCount }).toEqual({
      conversationId: "conv",
      promptText: "",
      promptLength: 0,
      promptTokenIds: [1, 2],
      promptTokenCount: 2,
    });
  });

  test("ids given as a function are read only when a router reads them, once; their count is known before", () => {
    let reads = 0;
    const request = withPromptTokenIds(
      routingRequestOf("chat", { messages: [{ role: "user", content: "hi there" }] }, undefined),
      () => {
        reads++;
        return [5, 6, 7];
      },
      3,
    );
    expect(estimatedPromptTokens(request)).toBe(3);
    expect(contentWeight(request)).toBe(3);
    expect(reads).toBe(0);
    expect(request.promptTokenIds).toEqual([5, 6, 7]);
    expect(request.promptTokenIds).toEqual([5, 6, 7]);
    expect(reads).toBe(1);
  });

  test("the prompt's length is known without building its text, and equals the text's", () => {
    const bodies: [PromptApi, JsonObject][] = [
      [
        "chat",
        {
          messages: [
            { role: "system", content: "Be brief." },
            { role: "user", content: ["Look:", { type: "image_url" }, 7] },
            { role: "assistant", tool_calls: [{ function: { name: "get", arguments: "{}" } }] },
            3,
            { content: "" },
          ],
        },
      ],
      ["completions", { prompt: ["a", "", "b"] }],
      ["completions", { prompt: "" }],
      [
        "responses",
        {
          instructions: "Be kind.",
          input: [
            { type: "function_call", name: "w", arguments: "{}" },
            { type: "other" },
            { type: "function_call_output", output: [{ text: "sunny" }] },
            "x",
          ],
        },
      ],
      ["responses", { input: "" }],
    ];
    for (const [api, body] of bodies) {
      const request = routingRequestOf(api, body, undefined);
      expect(request.promptLength).toBe(promptTextOf(api, body).length);
      expect(request.promptText).toBe(promptTextOf(api, body));
      expect(withPromptTokenIds(request, [5]).promptText).toBe(promptTextOf(api, body));
      expect(withPromptTokenIds(request, [5]).promptTokenIds).toEqual([5]);
    }
  });
});
