/**
 * No client error from a pooled worker connection: connections are dropped before the
 * worker's keep-alive closes them, and a request a reused connection loses before any answer
 * goes once more to the same worker on a fresh connection, for both legs.
 */
import { describe, expect, test } from "bun:test";
import { startCluster } from "./support/cluster.ts";

const chat = (content: string, stream: boolean) => ({ model: "m", messages: [{ role: "user", content }], stream, max_tokens: 3 });

async function ask(post: (path: string, body: unknown) => Promise<Response>, i: number): Promise<number> {
  try {
    const response = await post("/v1/chat/completions", chat(`loop ${i}`, i % 2 === 0));
    const text = await response.text();
    return response.status === 200 && !text.includes('"error"') ? 0 : 1;
  } catch {
    return 1;
  }
}

describe("stale pooled connections", () => {
  test("a pooled connection idle --worker-keep-alive-s is never reused; one idle less is", async () => {
    // The worker would keep them 10 s: only the proxy's own expiry (200 ms) closes them.
    const faults = { keepAliveTimeoutMs: 10_000 };
    await using cluster = await startCluster({
      contexts: [{ faults }],
      generations: [{ faults }],
      config: { workerKeepAliveMs: 200, healthCheckIntervalMs: 60_000 },
    });
    // The generation worker: nothing but the proxy connects to it (context workers also get the emulator's own KV claims).
    const worker = cluster.generations[0]!;
    const one = async (): Promise<void> => {
      await (await cluster.post("/v1/chat/completions", chat("pooled", false))).text();
    };
    await one();
    await Bun.sleep(250);
    // The first request after the expiry sweeps the pool: it goes on a new connection.
    let opened = worker.connectionFaults().opened;
    await one();
    expect(worker.connectionFaults().opened).toBe(opened + 1);
    // Right after, the connection it left is reused.
    opened = worker.connectionFaults().opened;
    await one();
    await one();
    expect(worker.connectionFaults().opened).toBe(opened);
  });

  test("a worker that resets every kept-alive connection's next request unread costs the client nothing, on both legs", async () => {
    const faults = { resetKeptAlive: true };
    await using cluster = await startCluster({ contexts: [{ faults }], generations: [{ faults }] });
    let errors = 0;
    for (let i = 0; i < 60; i++) errors += await ask((path, body) => cluster.post(path, body), i);
    expect(errors).toBe(0);
    // Both legs met the reset (and were served on a fresh connection).
    expect(cluster.contexts[0]!.connectionFaults().resets).toBeGreaterThan(10);
    expect(cluster.generations[0]!.connectionFaults().resets).toBeGreaterThan(10);
    expect(
      cluster.logs.filter((line) => String(line["msg"]).includes("a reused connection closed before any answer")).length,
    ).toBeGreaterThan(20);
  });

  test("a middlebox resetting after forwarding a whole generation request costs a restart, not the healthy worker's ejection", async () => {
    // The resend finds the KV pulled by the first copy (a 500); the request restarts on a fresh pair.
    await using cluster = await startCluster({
      generations: [{ tokenMs: 50, faults: { resetKeptAliveAfterMs: 100 } }, {}],
      config: { outlierFailures: 1 },
    });
    const [middleboxed] = cluster.generations;
    for (let i = 0; i < 8 && middleboxed!.connectionFaults().resets === 0; i++) {
      const response = await cluster.post("/v1/chat/completions", {
        model: "m",
        messages: [{ role: "user", content: `q${i} [[emu tokens=6]]` }],
        max_tokens: 6,
      });
      expect(response.status).toBe(200);
      await response.text();
    }
    expect(middleboxed!.connectionFaults().resets).toBeGreaterThan(0);
    expect(cluster.logs.some((line) => String(line["msg"]).includes("a reused connection closed before any answer"))).toBe(true);
    expect(cluster.logs.filter((line) => line["msg"] === "worker ejected: its requests keep failing")).toHaveLength(0);
  });

  test("a load loop whose gaps straddle the workers' keep-alive close sees no client error (2,000 requests, both legs)", async () => {
    // uvicorn's close at 100 ms after each response; the proxy expires its pooled connections at 60 ms.
    const faults = { keepAliveTimeoutMs: 100 };
    await using cluster = await startCluster({ contexts: [{ faults }], generations: [{ faults }], config: { workerKeepAliveMs: 60 } });
    const loops = 40;
    const perLoop = 50;
    let errors = 0;
    await Promise.all(
      Array.from({ length: loops }, async (_, loop) => {
        for (let i = 0; i < perLoop; i++) {
          errors += await ask((path, body) => cluster.post(path, body), loop * perLoop + i);
          // Gaps from 40 to 140 ms: some below the proxy's expiry, some past the worker's close.
          await Bun.sleep(40 + ((loop * 37 + i * 53) % 101));
        }
      }),
    );
    expect(errors).toBe(0);
    expect(cluster.contexts[0]!.requests.filter((r) => r.phase === "context")).toHaveLength(loops * perLoop);
    // The pools were expired many times over: 40 loops keep about 40 connections open otherwise.
    // Each connection expires on its own clock, so how many reopen follows the machine's timing
    // (108–140 on a loaded 2-core machine): twice the loops is far above what no expiry opens.
    for (const worker of [cluster.contexts[0]!, cluster.generations[0]!])
      expect(worker.connectionFaults().opened).toBeGreaterThan(2 * loops);
  }, 60_000);
});
