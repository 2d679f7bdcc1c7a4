/**
 * A generation leg that fails, resets or stalls before any byte of it reached the client runs
 * once more on a fresh context and generation pair: the client sees nothing but the time.
 */
import { describe, expect, test } from "bun:test";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { eventually, startCluster, sseData } from "./support/cluster.ts";

const chat = (content: string, stream: boolean) => ({ model: "m", messages: [{ role: "user", content }], stream, max_tokens: 4 });

describe("restart before the first byte", () => {
  for (const stream of [true, false]) {
    test(`a generation worker killed before its first token costs the client nothing but time (${stream ? "streamed" : "non-streamed"})`, async () => {
      await using cluster = await startCluster({ generations: [{}, {}], config: { maxRetries: 0 } });
      const pending = cluster.post("/v1/chat/completions", chat("kill me [[emu gen.queue_ms=300 tokens=4]]", stream));
      // Whichever generation worker got the request dies before its first token.
      const victim = await Promise.race(
        cluster.generations.map((worker) => worker.waitFor((r) => r.phase === "generation").then(() => worker)),
      );
      await victim.stop();
      const response = await pending;
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(text).toContain(" tok4");
      expect(text).not.toContain('"error"');
      const contextIds = cluster.contexts[0]!.requests.filter((r) => r.phase === "context").map((r) => r.disaggRequestId);
      expect(contextIds).toHaveLength(2);
      expect(contextIds[0]).not.toBe(contextIds[1]);
      expect(
        cluster.logs.some(
          (line) =>
            line["msg"] === "generation failed before any byte reached the client: once more on a fresh context and generation pair",
        ),
      ).toBe(true);
    });
  }

  test("a restarted Responses or Anthropic stream keeps the ids its client sees", async () => {
    await using cluster = await startCluster({ generations: [{}, {}], config: { maxRetries: 0, healthCheckIntervalMs: 50 } });
    const cases = [
      {
        path: "/v1/responses",
        body: { model: "m", input: "kill [[emu gen.queue_ms=300 tokens=3]]", stream: true },
        id: (event: Record<string, unknown>) => (event["response"] as Record<string, unknown> | undefined)?.["id"],
      },
      {
        path: "/v1/messages",
        body: { model: "m", max_tokens: 8, messages: [{ role: "user", content: "kill [[emu gen.queue_ms=300 tokens=3]]" }], stream: true },
        id: (event: Record<string, unknown>) => (event["message"] as Record<string, unknown> | undefined)?.["id"],
      },
    ];
    for (const { path, body, id } of cases) {
      const seen = cluster.generations.map((worker) => worker.requests.length);
      const pending = cluster.post(path, body);
      const victim = await Promise.race(
        cluster.generations.map((worker, i) => worker.waitFor((r) => r.seq >= seen[i]! && r.phase === "generation").then(() => worker)),
      );
      const port = victim.port;
      await victim.stop();
      const response = await pending;
      expect(response.status).toBe(200);
      const events = (await sseData(response))
        .filter((data) => data.startsWith("{"))
        .map((data) => JSON.parse(data) as Record<string, unknown>);
      const ids = new Set(events.map(id).filter((value) => value !== undefined));
      // One id from the opening to the end, and an answer that completed.
      expect(ids.size).toBe(1);
      expect(JSON.stringify(events)).toContain(" tok3");
      expect(events.some((event) => event["type"] === "error" || event["type"] === "response.failed")).toBe(false);
      expect(events.at(-1)?.["type"]).toBe(path === "/v1/responses" ? "response.completed" : "message_stop");
      // The killed worker comes back for the next case.
      const index = cluster.generations.indexOf(victim);
      (cluster.generations as unknown as unknown[])[index] = startEmulatedWorker({ role: "generation", port });
      // It refused a connection, so it is out of rotation until a health check passes.
      await eventually(() => cluster.proxy.app.placement.pool.ready("generation").length === 2);
    }
  });

  test("a stream broken before its first byte is served whole by another pair; once bytes reached the client, the failure is in-band", async () => {
    await using cluster = await startCluster({ generations: [{ faults: { cutAfterTokens: 0 } }, {}], config: { maxRetries: 0 } });
    for (let i = 0; i < 4; i++) {
      const response = await cluster.post("/v1/chat/completions", chat(`cut ${i} [[emu tokens=3]]`, true));
      expect(response.status).toBe(200);
      const events = await sseData(response);
      expect(events.at(-1)).toBe("[DONE]");
      expect(events.join("")).not.toContain('"error"');
    }
    // After the first bytes a broken stream ends in-band, as before: never run twice.
    const late = await cluster.post("/v1/chat/completions", chat("late [[emu gen.cut=2 tokens=5]]", true));
    const text = await late.text();
    expect(text).toContain('"error"');
    expect(text).toContain(" tok2");
  });

  test("a generation worker that sends nothing within --first-token-timeout-ms is replaced by a fresh pair", async () => {
    await using cluster = await startCluster({
      generations: [{ faults: { rejectStatus: 503, rejectAfterMs: 5000 } }, {}],
      config: { maxRetries: 0, firstTokenTimeoutMs: 200 },
    });
    for (let i = 0; i < 2; i++) {
      const response = await cluster.post("/v1/chat/completions", chat(`slow ${i} [[emu tokens=2]]`, true));
      const events = await sseData(response);
      expect(events.at(-1)).toBe("[DONE]");
    }
    expect(
      cluster.logs.some(
        (line) =>
          line["msg"] === "generation failed before any byte reached the client: once more on a fresh context and generation pair" &&
          line["code"] === "WORKER_TIMEOUT",
      ),
    ).toBe(true);
  });
});

describe("restart before the first byte, generation_first", () => {
  for (const stream of [true, false]) {
    test(`a generation worker killed before its first token costs the client nothing but time; the pair it left is aborted (${stream ? "streamed" : "non-streamed"})`, async () => {
      await using cluster = await startCluster({ generations: [{}, {}], config: { schedule: "generation_first", maxRetries: 0 } });
      const pending = cluster.post("/v1/chat/completions", chat("kill me [[emu ctx.prefill_ms=300 tokens=4]]", stream));
      const victim = await Promise.race(
        cluster.generations.map((worker) => worker.waitFor((r) => r.phase === "generation").then(() => worker)),
      );
      const firstContext = await cluster.contexts[0]!.waitFor((r) => r.phase === "context");
      await victim.stop();
      const response = await pending;
      expect(response.status).toBe(200);
      const text = await response.text();
      expect(text).toContain(" tok4");
      expect(text).not.toContain('"error"');
      // The old context leg was aborted; the fresh pair ran under a new id, on the other generation worker.
      await cluster.contexts[0]!.waitFor((r) => r === firstContext && r.status === "aborted");
      const contextIds = cluster.contexts[0]!.requests.filter((r) => r.phase === "context").map((r) => r.disaggRequestId);
      expect(contextIds).toHaveLength(2);
      expect(contextIds[0]).not.toBe(contextIds[1]);
      const survivor = cluster.generations.find((worker) => worker !== victim)!;
      expect(survivor.requests.filter((r) => r.phase === "generation").map((r) => r.disaggRequestId)).toEqual([contextIds[1]]);
      expect(
        cluster.logs.some(
          (line) =>
            line["msg"] === "generation failed before any byte reached the client: once more on a fresh context and generation pair",
        ),
      ).toBe(true);
      await eventually(() => cluster.proxy.app.placement.table.active() === 0);
    });
  }

  test("a generation worker answering 500 is replaced by a fresh pair, blamed alone for it; once bytes reached the client, a failure is in-band", async () => {
    await using cluster = await startCluster({
      contexts: [{}, {}],
      generations: [{ faults: { rejectStatus: 500 } }, {}],
      config: { schedule: "generation_first", maxRetries: 0, outlierFailures: 2, outlierEjectionMs: 60_000 },
    });
    for (let i = 0; i < 6; i++) {
      const response = await cluster.post("/v1/chat/completions", chat(`fail ${i} [[emu tokens=3]]`, i % 2 === 0));
      expect(response.status).toBe(200);
      expect(await response.text()).toContain(" tok3");
    }
    const restarts = cluster.logs.filter(
      (line) => line["msg"] === "generation failed before any byte reached the client: once more on a fresh context and generation pair",
    );
    expect(restarts.length).toBeGreaterThan(0);
    // The failing generation worker is named and ejected; the context legs aborted with it are not its failures.
    const failing = cluster.generations[0]!.url;
    for (const line of restarts) expect(line["worker"]).toBe(failing);
    const ejected = cluster.logs
      .filter((line) => line["msg"] === "worker ejected: its requests keep failing")
      .map((line) => line["worker"]);
    expect(ejected).toEqual([failing]);
    const late = await cluster.post("/v1/chat/completions", chat("late [[emu gen.cut=2 tokens=5]]", true));
    const text = await late.text();
    expect(text).toContain('"error"');
    expect(text).toContain(" tok2");
  });

  test("a restarted Responses stream keeps the id its client sees", async () => {
    await using cluster = await startCluster({
      generations: [{ faults: { rejectStatus: 500 } }, {}],
      config: { schedule: "generation_first", maxRetries: 0 },
    });
    for (let i = 0; i < 2; i++) {
      const response = await cluster.post("/v1/responses", { model: "m", input: `fail ${i} [[emu tokens=3]]`, stream: true });
      expect(response.status).toBe(200);
      const events = (await sseData(response))
        .filter((data) => data.startsWith("{"))
        .map((data) => JSON.parse(data) as Record<string, unknown>);
      const ids = new Set(
        events.map((event) => (event["response"] as Record<string, unknown> | undefined)?.["id"]).filter((value) => value !== undefined),
      );
      expect(ids.size).toBe(1);
      expect(events.at(-1)?.["type"]).toBe("response.completed");
    }
    expect(
      cluster.logs.filter(
        (line) => line["msg"] === "generation failed before any byte reached the client: once more on a fresh context and generation pair",
      ).length,
    ).toBeGreaterThan(0);
  });
});
