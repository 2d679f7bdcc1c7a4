import { describe, expect, test } from "bun:test";
import { assembleToolCalls, contextPlan, planOutput, textOf } from "./output-plan.ts";
import { phaseSettings } from "../faults/phase-settings.ts";
import { tokenId, tokenize } from "./tokenizer.ts";

const chat = { maxTokens: undefined, chatExtras: true, toolNames: [] };

function settings(directives: Parameters<typeof phaseSettings>[2]) {
  return phaseSettings({ role: "mixed" }, "aggregated", directives, 10);
}

describe("tokenize", () => {
  test("gives one stable small id per whitespace-separated word", () => {
    const ids = tokenize("  hello   world\nhello ");
    expect(ids).toHaveLength(3);
    expect(ids[0]).toBe(ids[2] ?? -1);
    expect(ids[0]).toBe(tokenId("hello"));
    for (const id of ids) expect(id).toBeGreaterThanOrEqual(1000);
    for (const id of ids) expect(id).toBeLessThan(31000);
  });
});

describe("planOutput", () => {
  test("outputs the configured number of words and stops", () => {
    const plan = planOutput(settings({ tokens: 3 }), chat);
    expect(textOf(plan.tokens, "content")).toBe(" tok1 tok2 tok3");
    expect(plan.finishReason).toBe("stop");
  });

  test("uses 16 tokens when nothing limits the answer", () => {
    expect(planOutput(settings({}), chat).tokens).toHaveLength(16);
  });

  test("finishes with length when the request's max tokens cut the answer", () => {
    const plan = planOutput(settings({ tokens: 5 }), { ...chat, maxTokens: 2 });
    expect(plan.tokens).toHaveLength(2);
    expect(plan.finishReason).toBe("length");
  });

  test("stops after one token with finish=stop", () => {
    const plan = planOutput(settings({ tokens: 5, finishStop: true }), chat);
    expect(plan).toMatchObject({ finishReason: "stop" });
    expect(plan.tokens).toHaveLength(1);
  });

  test("puts reasoning tokens before the content", () => {
    const plan = planOutput(settings({ tokens: 2, reasoning: 2 }), chat);
    expect(plan.tokens.map((token) => token.kind)).toEqual(["reasoning", "reasoning", "content", "content"]);
    expect(textOf(plan.tokens, "reasoning")).toBe(" think1 think2");
  });

  test("interleaves the argument fragments of several tool calls", () => {
    const plan = planOutput(settings({ tools: 2 }), { ...chat, toolNames: ["get_weather"] });
    expect(plan.finishReason).toBe("tool_calls");
    const calls = plan.tokens.map((token) => ("call" in token ? token.call : -1));
    expect(calls).toEqual([0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
    const assembled = assembleToolCalls(plan.tokens);
    expect(assembled.map((call) => call.name)).toEqual(["get_weather", "get_weather"]);
    expect(assembled.map((call) => JSON.parse(call.arguments) as unknown)).toEqual([
      { location: "city0", index: 0 },
      { location: "city1", index: 1 },
    ]);
  });

  test("ignores tools and reasoning outside chat", () => {
    const plan = planOutput(settings({ tools: 2, reasoning: 2, tokens: 3 }), { ...chat, chatExtras: false });
    expect(plan.tokens.every((token) => token.kind === "content")).toBe(true);
    expect(plan.tokens).toHaveLength(3);
  });
});

describe("contextPlan", () => {
  test("keeps the first token and hands over with length", () => {
    const plan = contextPlan(planOutput(settings({ tokens: 4 }), chat));
    expect(plan.tokens).toHaveLength(1);
    expect(plan.finishReason).toBe("length");
  });

  test("finishes with stop when nothing is left for the generation phase", () => {
    expect(contextPlan(planOutput(settings({ tokens: 4 }), { ...chat, maxTokens: 1 })).finishReason).toBe("stop");
    expect(contextPlan(planOutput(settings({ finishStop: true }), chat)).finishReason).toBe("stop");
  });
});
