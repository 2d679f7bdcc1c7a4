import { isJsonObject } from "../src/json/json.ts";
import { describe, expect, test } from "bun:test";
import { eventually, startCluster } from "./support/cluster.ts";

const chat = (content: string, stream = false): object => ({
  model: "emulated-model",
  messages: [{ role: "user", content }],
  max_tokens: 4,
  stream,
});

describe("retries", () => {
  test("a context leg answered 503 is retried on a second context worker with a fresh id", async () => {
    await using cluster = await startCluster({
      contexts: [{ faults: { rejectStatus: 503 } }, {}],
      config: { contextRouter: "round_robin", maxRetries: 1 },
    });
    const response = await cluster.post("/v1/chat/completions", chat("retry me"));
    expect(response.status).toBe(200);
    const first = cluster.contexts[0]!.requests.find((r) => r.phase === "context");
    const second = cluster.contexts[1]!.requests.find((r) => r.phase === "context");
    expect(first).toBeDefined();
    expect(second).toBeDefined();
    expect(second!.disaggRequestId).not.toBe(first!.disaggRequestId!);
    const gen = cluster.generations[0]!.requests.find((r) => r.phase === "generation")!;
    expect(gen.disaggRequestId).toBe(second!.disaggRequestId);
    expect(response.headers.get("x-trtllm-engine-request-id")).toBe(second!.disaggRequestId!.toString());
    await eventually(() => cluster.logs.some((l) => l["msg"] === "request" && l["retries"] === 1));
  });

  test("a context leg answered 400 is not retried", async () => {
    await using cluster = await startCluster({ contexts: [{}, {}], config: { maxRetries: 3 } });
    const response = await cluster.post("/v1/chat/completions", chat("[[emu ctx.reject=400]]"));
    expect(response.status).toBe(400);
    const attempts = [...cluster.contexts[0]!.requests, ...cluster.contexts[1]!.requests].filter((r) => r.phase === "context");
    expect(attempts).toHaveLength(1);
  });

  test("a generation worker that refuses connections is skipped for another one", async () => {
    await using cluster = await startCluster({ generations: [{}, {}], config: { generationRouter: "round_robin", maxRetries: 1 } });
    await cluster.generations[0]!.stop();
    for (const stream of [false, true, false, true]) {
      const response = await cluster.post("/v1/chat/completions", chat("hello", stream));
      expect(response.status).toBe(200);
      await response.text();
    }
    expect(cluster.generations[1]!.requests.filter((r) => r.phase === "generation")).toHaveLength(4);
  });

  test("a generation leg that may have been delivered is never replayed", async () => {
    await using cluster = await startCluster({ generations: [{}, {}], config: { maxRetries: 3 } });
    for (const stream of [false, true]) {
      const response = await cluster.post("/v1/chat/completions", chat("[[emu gen.reject=503]]", stream));
      expect(response.status).toBe(503);
    }
    const attempts = [...cluster.generations[0]!.requests, ...cluster.generations[1]!.requests].filter((r) => r.phase === "generation");
    // The rest are the one-token settles of the hand-offs the refused legs left (handoff-settle.test.ts).
    const settles = attempts.filter((r) => isJsonObject(r.body) && r.body["max_tokens"] === 1 && r.body["stream"] === false);
    expect(attempts.length - settles.length).toBe(2);
  });

  test("a stream cut after some tokens is not replayed and ends with an in-band error", async () => {
    await using cluster = await startCluster({ config: { maxRetries: 3, streamStartWaitMs: 1000 } });
    const response = await cluster.post("/v1/chat/completions", chat("[[emu gen.cut=2 tokens=6]]", true));
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).not.toContain("[DONE]");
    expect(text).toContain('"error"');
    expect(cluster.generations[0]!.requests.filter((r) => r.phase === "generation")).toHaveLength(1);
  });
});
