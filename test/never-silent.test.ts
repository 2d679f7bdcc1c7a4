import { describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { eventually, startCluster } from "./support/cluster.ts";

const SCHEDULES = ["context_first", "generation_first"] as const;
const chat = (content: string, extra: object = {}): object => ({
  model: "emulated-model",
  messages: [{ role: "user", content }],
  max_tokens: 6,
  stream: true,
  ...extra,
});

describe.each(SCHEDULES)("%s: streams that never go silent", (schedule) => {
  test("a 3 s prefill gets 200 at once and a keepalive comment on every 200 ms of silence", async () => {
    await using cluster = await startCluster({ config: { schedule, streamStartWaitMs: 100, keepaliveIntervalMs: 200 } });
    const started = performance.now();
    const response = await cluster.post("/v1/chat/completions", chat("[[emu ctx.prefill_ms=3000]] think hard"));
    expect(response.status).toBe(200);
    expect(performance.now() - started).toBeLessThan(1000);
    const text = await response.text();
    const keepalives = text.split("\n\n").filter((frame) => frame === ": keepalive").length;
    expect(keepalives).toBeGreaterThanOrEqual(12);
    expect(keepalives).toBeLessThanOrEqual(17);
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
  });

  test("a failure within the start wait keeps its HTTP status and the worker's body", async () => {
    await using cluster = await startCluster({ config: { schedule, maxRetries: 0 } });
    const response = await cluster.post("/v1/chat/completions", chat("[[emu ctx.reject=400]]"));
    expect(response.status).toBe(400);
    const body = (await response.json()) as { object: string; code: number };
    expect(body.object).toBe("error");
    expect(body.code).toBe(400);
  });

  test("a failure after the stream opened ends it with an in-band error and no [DONE]", async () => {
    await using cluster = await startCluster({ config: { schedule, maxRetries: 0, streamStartWaitMs: 50, keepaliveIntervalMs: 100 } });
    const response = await cluster.post("/v1/chat/completions", chat("[[emu ctx.reject=503 ctx.reject_after_ms=400]]"));
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toContain("[DONE]");
    const last = text.trimEnd().split("\n\n").at(-1)!;
    expect(last.startsWith("data: ")).toBe(true);
    const error = (JSON.parse(last.slice(6)) as { error: { message: string; code: number } }).error;
    expect(error.code).toBe(503);
    expect(error.message.length).toBeGreaterThan(0);
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
  });

  test("the official openai client reads a kept-alive stream without complaint", async () => {
    await using cluster = await startCluster({ config: { schedule, streamStartWaitMs: 50, keepaliveIntervalMs: 100 } });
    const client = new OpenAI({ baseURL: `${cluster.url}/v1`, apiKey: "unused" });
    const stream = await client.chat.completions.create({
      model: "emulated-model",
      messages: [{ role: "user", content: "[[emu ctx.prefill_ms=600]] hello" }],
      max_tokens: 6,
      stream: true,
    });
    let text = "";
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? "";
    expect(text.trim().length).toBeGreaterThan(0);
  });
});

describe("timeouts", () => {
  test("a non-streamed call is bounded by the request timeout in total", async () => {
    await using cluster = await startCluster({ config: { requestTimeoutMs: 300, maxRetries: 0 } });
    const response = await cluster.post("/v1/chat/completions", chat("[[emu ctx.prefill_ms=3000]]", { stream: false }));
    expect(response.status).toBe(504);
    await cluster.contexts[0]!.waitFor((r) => r.phase === "context" && r.status === "aborted");
  });

  test("a stream is bounded by silence, not by its length", async () => {
    await using cluster = await startCluster({ config: { requestTimeoutMs: 400, keepaliveIntervalMs: 100, streamStartWaitMs: 50 } });
    const long = await cluster.post("/v1/chat/completions", chat("[[emu gen.token_ms=100 tokens=12]]", { max_tokens: 12 }));
    expect(await long.text()).toContain("[DONE]");
    const silent = await cluster.post(
      "/v1/chat/completions",
      chat("[[emu gen.silence_ms=3000 gen.silence_after=1 tokens=5]]", { max_tokens: 5 }),
    );
    const text = await silent.text();
    expect(text).not.toContain("[DONE]");
    expect(text).toContain('"code":504');
    await cluster.generations[0]!.waitFor((r) => r.phase === "generation" && r.status === "aborted");
  });
});
