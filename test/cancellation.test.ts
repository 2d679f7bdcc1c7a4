import { describe, expect, test } from "bun:test";
import { eventually, startCluster } from "./support/cluster.ts";

const SCHEDULES = ["context_first", "generation_first"] as const;
const chat = (content: string, stream: boolean): object => ({
  model: "emulated-model",
  messages: [{ role: "user", content }],
  max_tokens: 50,
  stream,
});

describe.each(SCHEDULES)("%s: client disconnect", (schedule) => {
  test.each([false, true])("leaving during the context phase aborts every leg (stream %p)", async (stream) => {
    await using cluster = await startCluster({ config: { schedule, streamStartWaitMs: 50 } });
    const client = new AbortController();
    const pending = cluster.post("/v1/chat/completions", chat("slow prefill [[emu prefill_ms=5000]]", stream), { signal: client.signal });
    pending.catch(() => {});
    const ctxLeg = await cluster.contexts[0]!.waitFor((r) => r.phase === "context");
    if (schedule === "generation_first") await cluster.generations[0]!.waitFor((r) => r.phase === "generation");
    const leftAt = performance.now();
    client.abort();
    await cluster.contexts[0]!.waitFor((r) => r === ctxLeg && r.status === "aborted");
    // Context first gives the phase 100 ms to begin answering (a committed hand-off is settled instead); far from the 5 s prefill's end.
    expect(performance.now() - leftAt).toBeLessThan(schedule === "context_first" ? 1000 : 100);
    if (schedule === "generation_first") {
      await cluster.generations[0]!.waitFor((r) => r.phase === "generation" && r.status === "aborted");
    }
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
    await eventually(() => cluster.logs.some((l) => l["outcome"] === "client_disconnected"));
    const line = cluster.logs.find((l) => l["outcome"] === "client_disconnected")!;
    expect(line["disagg_request_id"]).toBe(ctxLeg.disaggRequestId!.toString());
  });

  test("leaving mid-stream closes the generation worker's connection and releases its reservation", async () => {
    await using cluster = await startCluster({ config: { schedule } });
    const client = new AbortController();
    const response = await cluster.post("/v1/chat/completions", chat("long answer [[emu gen.token_ms=50 tokens=200]]", true), {
      signal: client.signal,
    });
    const reader = response.body!.getReader();
    await reader.read();
    client.abort();
    await cluster.generations[0]!.waitFor((r) => r.phase === "generation" && r.status === "aborted");
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
    await eventually(() => cluster.generations[0]!.running() === 0);
  });
});

describe("generation_first: paired legs", () => {
  test.each([false, true])("a failing context leg cancels the waiting generation leg (stream %p)", async (stream) => {
    await using cluster = await startCluster({ config: { schedule: "generation_first", maxRetries: 0 } });
    const response = await cluster.post("/v1/chat/completions", chat("[[emu ctx.reject=400 ctx.reject_after_ms=100]]", stream));
    expect(response.status).toBe(400);
    const gen = await cluster.generations[0]!.waitFor((r) => r.phase === "generation");
    await cluster.generations[0]!.waitFor((r) => r === gen && r.status === "aborted");
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
  });

  test.each([false, true])("a failing generation leg cancels the running context leg (stream %p)", async (stream) => {
    await using cluster = await startCluster({ config: { schedule: "generation_first", maxRetries: 0 } });
    const response = await cluster.post("/v1/chat/completions", chat("[[emu gen.reject=503 ctx.prefill_ms=5000]]", stream));
    expect(response.status).toBe(503);
    const ctx = await cluster.contexts[0]!.waitFor((r) => r.phase === "context");
    await cluster.contexts[0]!.waitFor((r) => r === ctx && r.status === "aborted");
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
  });
});
