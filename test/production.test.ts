import { describe, expect, test } from "bun:test";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { eventually, startCluster } from "./support/cluster.ts";

const chat = (content: string, stream = false, extra: object = {}): object => ({
  model: "m",
  messages: [{ role: "user", content }],
  max_tokens: 4,
  stream,
  ...extra,
});

describe("request log", () => {
  test("every finished request writes one line with its outcome", async () => {
    await using cluster = await startCluster({ config: { maxRetries: 0, requestTimeoutMs: 300 } });
    await (await cluster.post("/v1/chat/completions", chat("fine"))).text();
    await (await cluster.post("/v1/chat/completions", chat("[[emu ctx.reject=503]]"))).text();
    await (await cluster.post("/v1/chat/completions", chat("[[emu ctx.prefill_ms=2000]]"))).text();
    await (await cluster.post("/v1/chat/completions", { model: "m" })).text();
    const client = new AbortController();
    const leaving = cluster.post("/v1/chat/completions", chat("[[emu ctx.prefill_ms=2000]]"), { signal: client.signal });
    leaving.catch(() => {});
    await cluster.contexts[0]!.waitFor((r) => r.phase === "context" && r.status === "running");
    client.abort();
    await eventually(() => cluster.logs.filter((l) => l["msg"] === "request").length === 5);
    const lines = cluster.logs.filter((l) => l["msg"] === "request");
    expect(lines.map((l) => String(l["outcome"])).toSorted()).toEqual(["client_disconnected", "ok", "rejected", "timeout", "worker_error"]);
    const ok = lines.find((l) => l["outcome"] === "ok")!;
    for (const field of [
      "disagg_request_id",
      "route",
      "stream",
      "context_worker",
      "generation_worker",
      "schedule",
      "status",
      "retries",
      "ttfb_ms",
      "duration_ms",
      "bytes_out",
    ]) {
      expect(ok[field]).toBeDefined();
    }
    expect(JSON.stringify(lines)).not.toContain("fine");
  });

  test("a request that fails at a worker names that worker in its line, whichever leg failed", async () => {
    await using cluster = await startCluster({ config: { maxRetries: 0 } });
    await (await cluster.post("/v1/chat/completions", chat("[[emu gen.reject=503]]"))).text();
    await (await cluster.post("/v1/chat/completions", chat("[[emu ctx.reject=503]]"))).text();
    await eventually(() => cluster.logs.filter((l) => l["msg"] === "request").length === 2);
    const lines = cluster.logs.filter((l) => l["msg"] === "request");
    expect(lines.map((l) => l["outcome"])).toEqual(["worker_error", "worker_error"]);
    expect(lines.map((l) => l["failed_worker"])).toEqual([cluster.generations[0]!.url, cluster.contexts[0]!.url]);
  });
});

describe("worker health", () => {
  test("a worker killed mid-load is ejected after its failed checks, gets nothing meanwhile, and returns when healthy", async () => {
    await using cluster = await startCluster({
      generations: [{}, {}],
      config: { healthCheckIntervalMs: 40, healthCheckTimeoutMs: 100, healthCheckFailures: 2, healthCheckSuccesses: 1 },
    });
    const victim = cluster.generations[0]!;
    const port = victim.port;
    await victim.stop();
    const pool = cluster.proxy.app.placement.pool;
    await eventually(() => pool.all("generation").find((w) => w.origin === victim.url)?.ready === false);
    for (let i = 0; i < 6; i++) expect((await cluster.post("/v1/chat/completions", chat("while ejected"))).status).toBe(200);
    expect(cluster.generations[1]!.requests.filter((r) => r.phase === "generation")).toHaveLength(6);
    const info = (await (await fetch(`${cluster.url}/cluster_info`)).json()) as {
      workers: { generation: { url: string; ready: boolean }[] };
    };
    expect(info.workers.generation.find((w) => w.url === victim.url)?.ready).toBe(false);
    await using revived = startEmulatedWorker({ role: "generation", port });
    await eventually(() => pool.all("generation").every((w) => w.ready));
    for (let i = 0; i < 4; i++) await (await cluster.post("/v1/chat/completions", chat("back again"))).text();
    expect(revived.requests.filter((r) => r.phase === "generation").length).toBeGreaterThan(0);
  });
});

describe("graceful drain", () => {
  test("in-flight streams finish, new work gets 503 with Retry-After, /health says 503, /livez 200", async () => {
    await using cluster = await startCluster({ generations: [{ tokenMs: 100 }], config: { streamStartWaitMs: 50 } });
    const open = await cluster.post("/v1/chat/completions", chat("[[emu tokens=15]]", true, { max_tokens: 15 }));
    const body = open.text();
    await cluster.generations[0]!.waitFor((r) => r.phase === "generation");
    const drained = cluster.proxy.drain(5000);
    const refused = await cluster.post("/v1/chat/completions", chat("too late"));
    expect(refused.status).toBe(503);
    expect(refused.headers.get("retry-after")).toBe("5");
    const refusedMessages = await cluster.post("/v1/messages", {
      model: "m",
      max_tokens: 4,
      messages: [{ role: "user", content: "late" }],
    });
    // Anthropic's overloaded_error, which its clients retry with back-off.
    expect(refusedMessages.status).toBe(529);
    expect(await refusedMessages.json()).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
    expect((await fetch(`${cluster.url}/health`)).status).toBe(503);
    expect((await fetch(`${cluster.url}/livez`)).status).toBe(200);
    expect(await body).toContain("[DONE]");
    await drained;
  });

  test("streams still running at the drain timeout end with an in-band error and their legs aborted", async () => {
    await using cluster = await startCluster({ config: { streamStartWaitMs: 50, keepaliveIntervalMs: 50 } });
    const open = await cluster.post("/v1/chat/completions", chat("[[emu ctx.prefill_ms=10000]]", true));
    const body = open.text();
    await cluster.contexts[0]!.waitFor((r) => r.phase === "context");
    await cluster.proxy.drain(200);
    const text = await body;
    expect(text).not.toContain("[DONE]");
    expect(text).toContain('"code":503');
    await cluster.contexts[0]!.waitFor((r) => r.phase === "context" && r.status === "aborted");
  });
});

describe("reload", () => {
  test("replacing the worker lists adds and removes workers without breaking an open stream", async () => {
    await using cluster = await startCluster({
      generations: [{ tokenMs: 60 }],
      config: { streamStartWaitMs: 50, healthCheckIntervalMs: 30 },
    });
    await using added = startEmulatedWorker({ role: "generation" });
    const open = await cluster.post("/v1/chat/completions", chat("[[emu tokens=10]]", true, { max_tokens: 10 }));
    const body = open.text();
    await cluster.generations[0]!.waitFor((r) => r.phase === "generation");
    cluster.proxy.replaceWorkers([cluster.contexts[0]!.url], [added.url]);
    await eventually(() => cluster.proxy.app.placement.pool.ready("generation").some((w) => w.origin === added.url));
    expect((await cluster.post("/v1/chat/completions", chat("to the new one"))).status).toBe(200);
    expect(added.requests.filter((r) => r.phase === "generation")).toHaveLength(1);
    expect(await body).toContain("[DONE]");
    expect(cluster.generations[0]!.requests.filter((r) => r.phase === "generation")).toHaveLength(1);
  });
});
