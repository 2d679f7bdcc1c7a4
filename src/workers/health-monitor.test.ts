import { describe, expect, test } from "bun:test";
import { memoryLogger, silentLogger } from "../observability/logger.ts";
import { HealthMonitor } from "./health-monitor.ts";
import { WorkerPool } from "./worker-pool.ts";

const ORIGIN = "http://127.0.0.1:9";

/** A worker that is healthy and serves model "m". */
async function healthyWorker(url: string): Promise<Response> {
  const path = new URL(url).pathname;
  if (path === "/v1/models") return Response.json({ object: "list", data: [{ id: "m" }] });
  return path === "/health" ? new Response(null, { status: 200 }) : Response.json({});
}

describe("health rounds", () => {
  test("two rounds at once check a worker once: it joins once, its model list asked once", async () => {
    const asked: string[] = [];
    const { promise: held, resolve: answer } = Promise.withResolvers<void>();
    // Each GET waits until both rounds have started, so a second check would overlap the first.
    const workerFetch = async (url: string): Promise<Response> => {
      const path = new URL(url).pathname;
      asked.push(path);
      await held;
      if (path === "/v1/models") return Response.json({ object: "list", data: [{ id: "m" }] });
      return path === "/health" ? new Response(null, { status: 200 }) : Response.json({});
    };
    const pool = new WorkerPool([ORIGIN], []);
    const monitor = new HealthMonitor(
      pool,
      { healthCheckTimeoutMs: 1000, healthCheckFailures: 1, healthCheckSuccesses: 1 },
      silentLogger,
      workerFetch,
    );
    const signal = new AbortController().signal;
    const rounds = [monitor.checkAll(signal), monitor.checkAll(signal)];
    answer();
    await Promise.all(rounds);
    expect(pool.all("context")[0]?.ready).toBe(true);
    expect(asked.filter((path) => path === "/health")).toHaveLength(1);
    expect(asked.filter((path) => path === "/v1/models")).toHaveLength(1);
    // The next round checks it again.
    await monitor.checkAll(signal);
    expect(asked.filter((path) => path === "/health")).toHaveLength(2);
  });

  test("a worker gone from the list is forgotten: listed again, it is ready anew rather than back (no record of every origin ever seen)", async () => {
    const pool = new WorkerPool([ORIGIN], []);
    const logger = memoryLogger();
    const monitor = new HealthMonitor(
      pool,
      { healthCheckTimeoutMs: 1000, healthCheckFailures: 1, healthCheckSuccesses: 1 },
      logger,
      healthyWorker,
    );
    const signal = new AbortController().signal;
    await monitor.checkAll(signal);
    pool.remove("context", ORIGIN);
    await monitor.checkAll(signal);
    pool.add("context", ORIGIN);
    await monitor.checkAll(signal);
    const joins = logger.records.map((record) => record["msg"]).filter((msg) => String(msg).startsWith("worker "));
    expect(joins).toEqual(["worker ready", "worker ready"]);
  });
});
