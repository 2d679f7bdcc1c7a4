import { describe, expect, test } from "bun:test";
import type { JsonObject } from "../json/json.ts";
import { startEmulatedWorker } from "./index.ts";
import { at, json, post, sseEvents, ssePayloads, stringAt } from "./test-support.ts";

const user = (content: string) => ({ messages: [{ role: "user", content }] });

describe("aggregated chat", () => {
  test("streams a role chunk, one chunk per token with the finish on the last, then [DONE]", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const response = await post(worker.url, "/v1/chat/completions", { ...user("hi [[emu tokens=3]]"), stream: true });
    expect(response.headers.get("content-type")).toBe("text/event-stream; charset=utf-8");
    const text = await response.text();
    expect(text.endsWith("data: [DONE]\n\n")).toBe(true);
    const chunks = ssePayloads(text);
    expect(chunks.map((c) => at(c, "choices", 0, "delta"))).toEqual([
      { role: "assistant", content: "" },
      { content: " tok1" },
      { content: " tok2" },
      { content: " tok3" },
    ]);
    expect(chunks.map((c) => at(c, "choices", 0, "finish_reason"))).toEqual([null, null, null, "stop"]);
    expect(new Set(chunks.map((c) => at(c, "id"))).size).toBe(1);
    expect(chunks.every((c) => at(c, "object") === "chat.completion.chunk" && at(c, "usage") === undefined)).toBe(true);
  });

  test("puts usage on every chunk with continuous_usage_stats, and in a final chunk with include_usage", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const options = { include_usage: true, continuous_usage_stats: true };
    const response = await post(worker.url, "/v1/chat/completions", {
      ...user("a b [[emu tokens=2]]"),
      stream: true,
      stream_options: options,
    });
    const chunks = ssePayloads(await response.text());
    expect(chunks.map((c) => at(c, "usage", "completion_tokens"))).toEqual([0, 1, 2, 2]);
    expect(at(chunks.at(-1), "choices")).toEqual([]);
    expect(at(chunks[0], "usage", "prompt_tokens")).toBe(4);
  });

  test("streams several tool calls with their fragments interleaved, finishing with tool_calls", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const tools = [{ type: "function", function: { name: "get_weather", parameters: {} } }];
    const response = await post(worker.url, "/v1/chat/completions", { ...user("weather? [[emu tools=2]]"), tools, stream: true });
    const chunks = ssePayloads(await response.text());
    const calls = chunks.flatMap((c) => {
      const call = at(c, "choices", 0, "delta", "tool_calls", 0);
      return call === undefined ? [] : [call];
    });
    expect(calls.map((call) => at(call, "index"))).toEqual([0, 1, 0, 1, 0, 1, 0, 1, 0, 1]);
    expect(at(calls[0], "function", "name")).toBe("get_weather");
    const args = [0, 1].map((index) =>
      calls
        .filter((call) => at(call, "index") === index)
        .map((call) => stringAt(call, "function", "arguments"))
        .join(""),
    );
    expect(args.map((a) => JSON.parse(a) as unknown)).toEqual([
      { location: "city0", index: 0 },
      { location: "city1", index: 1 },
    ]);
    expect(at(chunks.at(-1), "choices", 0, "finish_reason")).toBe("tool_calls");
  });

  test("answers tool calls and reasoning in the non-streamed message", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const body = await json(await post(worker.url, "/v1/chat/completions", user("x [[emu tools=1 reasoning=2]]")));
    const message = at(body, "choices", 0, "message");
    expect(at(message, "content")).toBeNull();
    expect(at(message, "reasoning_content")).toBe(" think1 think2");
    expect(at(message, "tool_calls", 0, "function")).toEqual({ name: "tool_0", arguments: '{"location": "city0", "index": 0}' });
    expect(at(body, "usage", "completion_tokens_details")).toEqual({ reasoning_tokens: 2 });
  });

  test("streams reasoning as delta.reasoning_content before the content", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const response = await post(worker.url, "/v1/chat/completions", { ...user("x [[emu reasoning=2 tokens=1]]"), stream: true });
    const deltas = ssePayloads(await response.text())
      .slice(1)
      .map((c) => at(c, "choices", 0, "delta"));
    expect(deltas).toEqual([{ reasoning_content: " think1" }, { reasoning_content: " think2" }, { content: " tok1" }]);
  });
});

describe("aggregated completions", () => {
  test("streams text_completion chunks, a usage chunk and [DONE]", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", outputTokens: 2 });
    const response = await post(worker.url, "/v1/completions", { prompt: "p", stream: true, stream_options: { include_usage: true } });
    const events = sseEvents(await response.text());
    expect(events.at(-1)?.data).toBe("[DONE]");
    const chunks = ssePayloads(events.map((e) => `data: ${e.data}\n\n`).join(""));
    expect(chunks.map((c) => at(c, "object"))).toEqual(["text_completion", "text_completion", "text_completion"]);
    expect(chunks.map((c) => at(c, "choices", 0, "text"))).toEqual([" tok1", " tok2", undefined]);
    expect(at(chunks[2], "usage", "completion_tokens")).toBe(2);
  });
});

describe("aggregated Responses", () => {
  const request = {
    input: [{ role: "user", content: [{ type: "input_text", text: "hello [[emu tokens=5]]" }] }],
    instructions: "be brief",
    max_output_tokens: 3,
    temperature: 0.5,
    tools: [],
    metadata: { k: "v" },
    stream: true,
  };

  test("streams the worker's full event sequence numbered from 0, echoing the request's parameters", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const response = await post(worker.url, "/v1/responses", request);
    expect(response.headers.get("x-trtllm-engine-request-id")).toMatch(/^\d+$/);
    const events = sseEvents(await response.text());
    expect(events.map((e) => e.event)).toEqual([
      "response.created",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.content_part.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const payloads = ssePayloads(events.map((e) => `data: ${e.data}\n\n`).join(""));
    payloads.forEach((payload, i) => {
      expect(at(payload, "sequence_number")).toBe(i);
      expect(at(payload, "type")).toBe(events[i]?.event ?? "");
    });
    const created = at(payloads[0], "response");
    expect(created).toMatchObject({
      status: "in_progress",
      output: [],
      instructions: "be brief",
      max_output_tokens: 3,
      temperature: 0.5,
      metadata: { k: "v" },
    });
    expect(at(created, "id")).toMatch(/^resp_[0-9a-f]{32}$/);
    const completed = at(payloads.at(-1), "response");
    expect(completed).toMatchObject({ status: "incomplete", incomplete_details: { reason: "max_output_tokens" } });
    expect(at(completed, "output", 0, "content", 0, "text")).toBe(" tok1 tok2 tok3");
    expect(at(completed, "usage", "output_tokens")).toBe(3);
  });

  test("answers a non-streamed request with the completed response and the engine request id header", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const response = await post(worker.url, "/v1/responses", { input: "hi [[emu tokens=2]]" });
    expect(response.headers.get("x-trtllm-engine-request-id")).toMatch(/^\d+$/);
    const body = await json(response);
    expect(at(body, "status")).toBe("completed");
    expect(at(body, "output", 0, "content", 0, "text")).toBe(" tok1 tok2");
  });

  test("repeats its own response.in_progress while the prefill is silent", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", responsesKeepaliveMs: 20 });
    const response = await post(worker.url, "/v1/responses", { input: "x [[emu prefill_ms=90 tokens=1]]", stream: true });
    const payloads = ssePayloads(await response.text());
    const types = payloads.map((p) => at(p, "type"));
    const firstOutput = types.indexOf("response.output_item.added");
    const keepalives = payloads.slice(2, firstOutput);
    expect(keepalives.length).toBeGreaterThanOrEqual(2);
    for (const keepalive of keepalives) {
      expect(at(keepalive, "type")).toBe("response.in_progress");
      expect(at(keepalive, "response")).toEqual(at(payloads[1], "response") ?? null);
    }
    expect(payloads.map((p) => at(p, "sequence_number"))).toEqual(payloads.map((_, i) => i));
  });

  test("stays quiet between events that come faster than the keepalive interval", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", responsesKeepaliveMs: 10_000 });
    const response = await post(worker.url, "/v1/responses", { input: "x [[emu prefill_ms=30 tokens=2]]", stream: true });
    const types = ssePayloads(await response.text()).map((p: JsonObject) => at(p, "type"));
    expect(types.filter((t) => t === "response.in_progress")).toHaveLength(1);
  });
});
