import { describe, expect, test } from "bun:test";
import { type JsonObject, jsonInteger } from "../json/json.ts";
import { buildResponsesOpening } from "./responses-opening.ts";

const NOW_MS = 1_700_000_123_456;
const BASE: JsonObject = { model: "llama", input: "hi", stream: true, request_id: "resp_101_0123456789abcdef" };

function build(fields: JsonObject): JsonObject | undefined {
  return buildResponsesOpening({ ...BASE, ...fields }, NOW_MS);
}

describe("buildResponsesOpening", () => {
  test("builds an in-progress response named after request_id, with the worker's defaults", () => {
    expect(build({})).toEqual({
      id: "resp_101_0123456789abcdef",
      object: "response",
      created_at: 1_700_000_123,
      status: "in_progress",
      error: null,
      incomplete_details: null,
      instructions: null,
      max_output_tokens: null,
      max_tool_calls: null,
      model: "llama",
      output: [],
      parallel_tool_calls: false,
      previous_response_id: null,
      reasoning: null,
      store: false,
      temperature: 1,
      text: null,
      tool_choice: "auto",
      tools: [],
      top_p: 1,
      truncation: "disabled",
      usage: null,
      user: null,
      metadata: null,
      background: false,
      service_tier: "auto",
      top_logprobs: 0,
    });
  });

  test("echoes the request's parameters", () => {
    const tools = [{ type: "function", name: "f", parameters: {} }];
    const opening = build({
      instructions: "be brief",
      max_output_tokens: 64,
      temperature: 0.2,
      top_p: 0.9,
      tools,
      tool_choice: "required",
      parallel_tool_calls: true,
      text: { format: { type: "text" } },
      reasoning: { effort: "low" },
      truncation: "auto",
      metadata: { k: "v" },
      user: "u1",
      store: true,
      previous_response_id: "resp_old",
    });
    expect(opening).toMatchObject({
      instructions: "be brief",
      max_output_tokens: 64,
      temperature: 0.2,
      top_p: 0.9,
      tools,
      tool_choice: "required",
      parallel_tool_calls: true,
      text: { format: { type: "text" } },
      reasoning: { effort: "low" },
      truncation: "auto",
      metadata: { k: "v" },
      user: "u1",
      store: false,
      previous_response_id: null,
    });
  });

  test("treats explicit nulls as unset, as a worker does", () => {
    expect(build({ temperature: null, top_p: null, max_output_tokens: null })).toMatchObject({
      temperature: 1,
      top_p: 1,
      max_output_tokens: null,
    });
  });

  test("accepts the edges of each range and a large max_output_tokens", () => {
    expect(build({ temperature: 0, top_p: 0 })).toBeDefined();
    expect(build({ temperature: 2, top_p: 1, max_output_tokens: 1 })).toBeDefined();
    expect(build({ max_output_tokens: jsonInteger(2n ** 60n) })).toBeDefined();
  });

  test("builds no opening for a parameter a worker rejects, so the request waits for its pipeline", () => {
    const rejected: JsonObject[] = [
      { temperature: -0.1 },
      { temperature: 2.1 },
      { temperature: "1" },
      { top_p: 2 },
      { top_p: -1 },
      { top_p: true },
      { max_output_tokens: 0 },
      { max_output_tokens: 1.5 },
      { max_output_tokens: "10" },
      { instructions: 3 },
      { tools: {} },
      { tool_choice: "required", tools: null },
      { truncation: "sometimes" },
      { prompt: { id: "p" } },
      { background: true },
      { model: null },
      { request_id: null },
    ];
    for (const fields of rejected) expect([fields, build(fields)]).toEqual([fields, undefined]);
  });
});
