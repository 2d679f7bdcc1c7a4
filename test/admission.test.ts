import { describe, expect, test } from "bun:test";
import { eventually, startCluster } from "./support/cluster.ts";

const chat = (content: string, stream = false): object => ({ model: "m", messages: [{ role: "user", content }], max_tokens: 3, stream });

describe("admission control", () => {
  test("beyond --max-inflight a request gets 429 with Retry-After at once, and the proxy recovers", async () => {
    await using cluster = await startCluster({ config: { maxInflight: 2 } });
    const slow = [1, 2].map(() => cluster.post("/v1/chat/completions", chat("[[emu ctx.prefill_ms=400]]")));
    await eventually(() => cluster.proxy.app.requests.active.size === 2);
    const started = performance.now();
    const refused = await cluster.post("/v1/chat/completions", chat("one too many"));
    expect(performance.now() - started).toBeLessThan(200);
    expect(refused.status).toBe(429);
    expect(refused.headers.get("retry-after")).toBe("5");
    const anthropic = await cluster.post("/v1/messages", { model: "m", max_tokens: 3, messages: [{ role: "user", content: "x" }] });
    expect(anthropic.status).toBe(429);
    expect(((await anthropic.json()) as { error: { type: string } }).error.type).toBe("rate_limit_error");
    for (const response of await Promise.all(slow)) expect(response.status).toBe(200);
    expect((await cluster.post("/v1/chat/completions", chat("after"))).status).toBe(200);
    expect(cluster.logs.some((l) => l["outcome"] === "rejected" && l["status"] === 429)).toBe(true);
  });

  test("with --admission-wait-ms a request over the limit waits for a slot instead", async () => {
    await using cluster = await startCluster({ config: { maxInflight: 1, admissionWaitMs: 2000 } });
    const first = cluster.post("/v1/chat/completions", chat("[[emu ctx.prefill_ms=200]]"));
    await eventually(() => cluster.proxy.app.requests.active.size === 1);
    const second = await cluster.post("/v1/chat/completions", chat("queued"));
    expect(second.status).toBe(200);
    expect((await first).status).toBe(200);
  });

  test("a worker at --max-inflight-per-worker is skipped; when all are full the request gets 429", async () => {
    await using cluster = await startCluster({
      contexts: [{}, {}],
      generations: [{ tokenMs: 100 }, { tokenMs: 100 }],
      config: { maxInflightPerWorker: 1 },
    });
    const open = [1, 2].map(() => cluster.post("/v1/chat/completions", chat("[[emu tokens=5]]", true)));
    const bodies = (await Promise.all(open)).map((r) => r.text());
    expect(cluster.generations.map((g) => g.requests.filter((r) => r.phase === "generation").length)).toEqual([1, 1]);
    const refused = await cluster.post("/v1/chat/completions", chat("full"));
    expect(refused.status).toBe(429);
    for (const body of await Promise.all(bodies)) expect(body).toContain("[DONE]");
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
  });
});
