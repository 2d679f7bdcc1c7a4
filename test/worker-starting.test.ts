/**
 * A worker still loading its model, as trtllm-serve plays it (tensorrt_llm/serve/readiness.py
 * @ e6c89c08db8fc8e39c32a9589c732157df5d9dcd): the emulator answers every route 503 with code
 * `starting`, `Retry-After: 1` and `x-trtllm-server-state: starting`; the proxy shows such a
 * worker as starting in /cluster_info, the dashboard and its log, never as a failure, and
 * takes it into rotation once it is ready.
 */

import { describe, expect, test } from "bun:test";
import type { DashboardSnapshot } from "../src/dashboard/snapshot.ts";
import { DEFAULTS, type ProxyConfig } from "../src/config/types.ts";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { memoryLogger } from "../src/observability/logger.ts";
import { startProxy } from "../src/server/serve.ts";
import { eventually, startCluster } from "./support/cluster.ts";

const chat = { model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 3 };

/** A proxy on port 0 in front of one context and one generation worker, checking their health every 20 ms. */
function proxyConfig(context: string, generation: string): ProxyConfig {
  return {
    ...DEFAULTS,
    host: "127.0.0.1",
    port: 0,
    contextServers: [context],
    generationServers: [generation],
    serverStartPollMs: 20,
    healthCheckIntervalMs: 20,
    nodeId: 1,
    configFile: undefined,
  };
}

describe("the emulated worker while it starts", () => {
  test("every route, /health included, answers upstream's 503 starting, and nothing reaches the model; then it serves", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", startingMs: Number.POSITIVE_INFINITY });
    const answers = await Promise.all([
      fetch(`${worker.url}/health`),
      fetch(`${worker.url}/v1/models`),
      fetch(`${worker.url}/no-such-route`),
      fetch(`${worker.url}/v1/chat/completions`, {
        method: "POST",
        body: JSON.stringify(chat),
        headers: { "content-type": "application/json" },
      }),
    ]);
    for (const answer of answers) {
      expect(answer.status).toBe(503);
      expect(answer.headers.get("x-trtllm-server-state")).toBe("starting");
      expect(answer.headers.get("retry-after")).toBe("1");
      expect(answer.headers.get("content-type")).toBe("application/json");
      expect(await answer.json()).toMatchObject({ error: { type: "ServiceUnavailableError", code: "starting" } });
    }
    expect(worker.requests).toEqual([]);
    worker.finishStarting();
    const health = await fetch(`${worker.url}/health`);
    expect(health.status).toBe(200);
    expect(health.headers.get("x-trtllm-server-state")).toBeNull();
  });

  test("--starting-ms ends by itself", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", startingMs: 150 });
    expect((await fetch(`${worker.url}/health`)).status).toBe(503);
    await eventually(async () => (await fetch(`${worker.url}/health`)).status === 200, 3000);
  });
});

describe("the proxy in front of a starting worker", () => {
  test("shows it as starting in /cluster_info, the dashboard and the log, warns about nothing, and serves once it is ready", async () => {
    const context = startEmulatedWorker({ role: "context", startingMs: Number.POSITIVE_INFINITY });
    const generation = startEmulatedWorker({ role: "generation" });
    const logger = memoryLogger();
    const proxy = startProxy({ ...proxyConfig(context.url, generation.url), serverStartTimeoutMs: 60_000 }, logger, "test");
    try {
      const started = proxy.waitForWorkers();
      const state = async (): Promise<unknown> => {
        const info = (await (await fetch(`${proxy.url.origin}/cluster_info`)).json()) as { workers: { context: { state: string }[] } };
        return info.workers.context[0]?.state;
      };
      await eventually(async () => (await state()) === "starting", 3000);
      const dashboard = (await (await fetch(`${proxy.url.origin}/dashboard/data`)).json()) as DashboardSnapshot;
      expect(dashboard.workers.find((row) => row.url === context.url)?.state).toBe("starting");
      // Several polls answered 503 starting (each round checks both workers): one info line, no warning.
      await eventually(() => generation.requests.filter((r) => r.path === "/health").length >= 4, 3000);
      expect(context.requests).toEqual([]);
      const mentions = logger.records.filter((line) => line["worker"] === context.url);
      expect(mentions.map((line) => [line["level"], line["state"]])).toEqual([["info", "starting"]]);
      expect(logger.records.filter((line) => line["level"] === "warn" || line["level"] === "error")).toEqual([]);
      expect((await fetch(`${proxy.url.origin}/health`)).status).toBe(503);

      context.finishStarting();
      expect(await started).toBe(true);
      expect(await state()).toBe("ready");
      const answer = await fetch(`${proxy.url.origin}/v1/chat/completions`, {
        method: "POST",
        body: JSON.stringify(chat),
        headers: { "content-type": "application/json" },
      });
      expect(answer.status).toBe(200);
    } finally {
      await proxy.stop();
      await Promise.all([context.stop(), generation.stop()]);
    }
  });

  test("a worker that restarts is out of rotation as starting, logged at info, not as an ejection", async () => {
    // A context worker whose process "restarts" in place: /health turns to upstream's starting 503, then back.
    let starting = false;
    using context = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(request) {
        const path = new URL(request.url).pathname;
        if (starting)
          return new Response('{"error":{"code":"starting"}}', {
            status: 503,
            headers: { "retry-after": "1", "x-trtllm-server-state": "starting" },
          });
        return path === "/health" ? new Response(null, { status: 200 }) : Response.json({});
      },
    });
    const origin = context.url.origin;
    const generation = startEmulatedWorker({ role: "generation" });
    const logger = memoryLogger();
    const proxy = startProxy(proxyConfig(origin, generation.url), logger, "test");
    try {
      expect(await proxy.waitForWorkers()).toBe(true);
      starting = true;
      await eventually(() => !proxy.app.placement.pool.isReady(), 3000);
      const lines = logger.records
        .filter((line) => line["worker"] === origin && line["msg"] !== "worker ready")
        .map((line) => [line["level"], line["msg"]]);
      expect(lines).toEqual([
        ["info", "worker starting: it answers 503 until its model is loaded"],
        ["info", "worker restarting: out of rotation until it is ready"],
      ]);
      const info = (await (await fetch(`${proxy.url.origin}/cluster_info`)).json()) as { workers: { context: { state: string }[] } };
      expect(info.workers.context[0]?.state).toBe("starting");
      starting = false;
      await eventually(() => proxy.app.placement.pool.isReady(), 3000);
    } finally {
      await proxy.stop();
      await generation.stop();
    }
  });
});

describe("a worker that restarted between two health checks", () => {
  for (const schedule of ["context_first", "generation_first"] as const) {
    test(`its start-up 503 to a request is no client error: the leg moves to another worker (a pinned one restarts its request on a fresh pair), and the worker is out of rotation until its health check passes (${schedule})`, async () => {
      await using cluster = await startCluster({
        contexts: [{}, {}],
        generations: [{}, {}],
        config: { schedule, maxRetries: 0, healthCheckIntervalMs: 600 },
      });
      // Generation-first's context leg is pinned (the hand-off names its worker): that request restarts on a fresh pair.
      const restarting = [cluster.contexts[0]!, cluster.generations[0]!];
      // Just after a health round answered: a whole interval passes before the next one sees the restart.
      await Promise.all(
        restarting.map((worker) => {
          const seen = worker.requests.length;
          return worker.waitFor((r) => r.seq >= seen && r.path === "/health" && r.status !== "running");
        }),
      );
      for (const worker of restarting) worker.restartInPlace();
      for (let i = 0; i < 4; i++) {
        const response = await cluster.post("/v1/chat/completions", {
          ...chat,
          messages: [{ role: "user", content: `after a restart ${i} [[emu tokens=3]]` }],
          stream: i % 2 === 1,
        });
        expect(response.status).toBe(200);
        expect(await response.text()).toContain(" tok3");
      }
      const pool = cluster.proxy.app.placement.pool;
      for (const worker of restarting) {
        expect(pool.entriesOf(worker.url).map((entry) => [entry.ready, entry.starting])).toEqual([[false, true]]);
        // Told once, at info level, as the worker answered.
        const lines = cluster.logs.filter((line) => line["worker"] === worker.url && line["state"] === "starting");
        expect(lines.map((line) => line["level"])).toEqual(["info"]);
      }
      expect(cluster.logs.filter((line) => line["msg"] === "request" && line["status"] !== 200)).toEqual([]);
      for (const worker of restarting) worker.finishStarting();
      await eventually(() => restarting.every((worker) => pool.entriesOf(worker.url)[0]?.ready === true), 5000);
    });
  }
});
