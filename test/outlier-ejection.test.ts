/**
 * Passive outlier ejection: a worker whose /health passes while every request to it hangs
 * leaves rotation after the configured consecutive failures, and returns once fixed.
 */
import { describe, expect, test } from "bun:test";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { isJsonObject, parseJson } from "../src/json/json.ts";
import { startCluster, eventually } from "./support/cluster.ts";

const chat = (content: string) => ({ model: "m", messages: [{ role: "user", content }], max_tokens: 3 });

describe("outlier ejection", () => {
  // Both schedule orders: context first (76f5429) and generation first (3f2963a) alike.
  for (const schedule of ["context_first", "generation_first"] as const) {
    test(`${schedule}: a non-streamed generation longer than --request-timeout (the client's max_tokens) neither ejects its worker nor runs again`, async () => {
      await using cluster = await startCluster({
        generations: [{ tokenMs: 20 }, { tokenMs: 20 }],
        config: { schedule, requestTimeoutMs: 300, outlierFailures: 1 },
      });
      const response = await cluster.post("/v1/chat/completions", { ...chat("long [[emu tokens=50]]"), max_tokens: 50 });
      expect(response.status).toBe(504);
      await response.text();
      // The hand-off's claim after the failure (capped at one token, handoff/settler.ts) is no second run.
      await eventually(() => cluster.proxy.app.handoffs.pending === 0, 3000, "settles done");
      const runs = (worker: (typeof cluster.generations)[number]) =>
        worker.requests.filter((r) => r.phase === "generation" && !JSON.stringify(r.body).includes('"max_tokens":1,'));
      expect(cluster.generations.flatMap(runs)).toHaveLength(1);
      expect(cluster.logs.filter((line) => line["msg"] === "worker ejected: its requests keep failing")).toHaveLength(0);
    });
  }

  test("a context worker answering /health 200 but hanging every request stops getting traffic after 3 failures, and returns when fixed", async () => {
    await using cluster = await startCluster({
      contexts: [{ prefillMs: 60_000 }, {}],
      config: { requestTimeoutMs: 300, outlierFailures: 3, outlierEjectionMs: 400, healthCheckIntervalMs: 50, maxRetries: 1 },
    });
    const [wedged, healthy] = cluster.contexts;
    const contextRequests = (worker: typeof wedged): number => worker!.requests.filter((r) => r.phase === "context").length;
    for (let i = 0; i < 12; i++) {
      const response = await cluster.post("/v1/chat/completions", chat(`q${i}`));
      expect(response.status).toBe(200);
      await response.text();
    }
    // Its failures were retried on the other worker; after the third it got nothing more.
    expect(contextRequests(wedged)).toBe(3);
    expect(contextRequests(healthy)).toBe(12);
    const ejections = cluster.logs.filter((line) => line["msg"] === "worker ejected: its requests keep failing");
    expect(ejections).toHaveLength(1);
    expect(ejections[0]).toMatchObject({ worker: wedged!.url, role: "context", reason: "timeout", consecutive_failures: 3 });
    const info = parseJson(await (await fetch(`${cluster.url}/cluster_info`)).text());
    const row =
      isJsonObject(info) && isJsonObject(info["workers"]) && Array.isArray(info["workers"]["context"])
        ? info["workers"]["context"][0]
        : undefined;
    expect(row).toMatchObject({ url: wedged!.url, state: "ejected", ejected: { reason: "timeout", ejections: 1 } });
    expect((await fetch(`${cluster.url}/health`)).status).toBe(200);
    expect(await (await fetch(`${cluster.url}/prometheus/metrics`)).text()).toContain(
      `disagg_proxy_worker_ejected{role="context",url="${wedged!.url}"} 1`,
    );

    // Fixed: the same address now serves normally. After its ejection time a passing check brings it back.
    const port = wedged!.port;
    await wedged!.stop();
    await using fixed = startEmulatedWorker({ role: "context", port });
    await eventually(
      () => cluster.logs.some((line) => line["msg"] === "worker back in rotation after its ejection"),
      3000,
      "the worker back in rotation",
    );
    for (let i = 0; i < 4; i++) await (await cluster.post("/v1/chat/completions", chat(`again ${i}`))).text();
    expect(fixed.requests.filter((r) => r.phase === "context").length).toBeGreaterThan(0);
  });

  test("the last worker of a role in rotation is never ejected", async () => {
    await using cluster = await startCluster({
      generations: [{ faults: { rejectStatus: 500 } }],
      config: { outlierFailures: 2, outlierEjectionMs: 60_000, maxRetries: 0 },
    });
    for (let i = 0; i < 4; i++) expect((await cluster.post("/v1/chat/completions", chat(`x${i}`))).status).toBe(500);
    expect(cluster.logs.some((line) => line["msg"] === "worker ejected: its requests keep failing")).toBe(false);
    expect((await fetch(`${cluster.url}/health`)).status).toBe(200);
  });
});
