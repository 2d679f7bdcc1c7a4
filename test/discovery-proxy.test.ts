import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { claimNodeId, etcdRegistrar } from "../src/discovery/index.ts";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import type { DashboardSnapshot } from "../src/dashboard/snapshot.ts";
import { silentLogger } from "../src/observability/logger.ts";
import { DisaggIdAllocator } from "../src/request/disagg-id.ts";
import { eventually, startCluster } from "./support/cluster.ts";
import { startEtcd, type EtcdServer } from "./support/etcd.ts";

let etcd: EtcdServer;
let clusters = 0;

beforeAll(async () => {
  etcd = await startEtcd();
});

afterAll(async () => {
  await etcd[Symbol.asyncDispose]();
});

const register = (clusterName: string) =>
  etcdRegistrar({ endpoint: etcd.endpoint, clusterName, heartbeatMs: 300, ttlMs: 2000, logger: silentLogger });
const chat = { model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 3 };

/** A proxy with no static worker: it finds them in the named etcd cluster. */
function discoveredCluster(clusterName: string): ReturnType<typeof startCluster> {
  return startCluster({
    contexts: [],
    generations: [],
    config: {
      discovery: {
        kind: "cluster",
        storage: "etcd",
        endpoint: etcd.endpoint,
        clusterName,
        minimalContext: 1,
        minimalGeneration: 1,
        leaseTtlMs: 2000,
      },
      serverStartTimeoutMs: 50,
      healthCheckIntervalMs: 50,
    },
  });
}

describe("the proxy with etcd discovery", () => {
  test("starts with no worker (/health 503), serves once workers register, and drops one that leaves", async () => {
    const clusterName = `proxy-${++clusters}`;
    await using cluster = await discoveredCluster(clusterName);
    expect((await fetch(`${cluster.url}/health`)).status).toBe(503);
    await using context = startEmulatedWorker({ role: "context", register: register(clusterName) });
    const generations = [0, 1].map(() => startEmulatedWorker({ role: "generation", register: register(clusterName) }));
    await eventually(() => cluster.proxy.app.placement.pool.ready("generation").length === 2, 5000);
    expect((await fetch(`${cluster.url}/health`)).status).toBe(200);
    expect((await cluster.post("/v1/chat/completions", chat)).status).toBe(200);
    const info = (await (await fetch(`${cluster.url}/cluster_info`)).json()) as {
      discovery: { connected: boolean };
      current_workers: { context_servers: { port: number; role: number }[]; generation_servers: { role: number }[] };
    };
    expect(info.discovery.connected).toBe(true);
    // Upstream's shape: the registrations as the workers wrote them.
    expect(info.current_workers.context_servers).toEqual([expect.objectContaining({ port: context.port, role: 0 })]);
    expect(info.current_workers.generation_servers.map((worker) => worker.role)).toEqual([1, 1]);
    await generations[0]!.stop();
    await eventually(() => cluster.proxy.app.placement.pool.all("generation").length === 1, 5000);
    for (let i = 0; i < 4; i++) expect((await cluster.post("/v1/chat/completions", chat)).status).toBe(200);
    expect(generations[0]!.requests.filter((r) => r.phase === "generation").length).toBeLessThanOrEqual(1);
    await generations[1]!.stop();
    expect(context.url.length).toBeGreaterThan(0);
  }, 20_000);

  test("the dashboard names etcd as the workers' source, connected, and when the list last changed", async () => {
    const clusterName = `dashboard-${++clusters}`;
    await using cluster = await discoveredCluster(clusterName);
    const before = Date.now();
    await using context = startEmulatedWorker({ role: "context", register: register(clusterName) });
    await eventually(() => cluster.proxy.app.placement.pool.all("context").length === 1, 5000);
    const data = (await (await fetch(`${cluster.url}/dashboard/data`)).json()) as DashboardSnapshot;
    expect(data.proxy.discovery).toMatchObject({ source: "etcd cluster", endpoint: etcd.endpoint, connected: true });
    expect(data.proxy.discovery.lastChangeAt).toBeGreaterThanOrEqual(before);
    expect(data.workers.map((w) => w.url)).toEqual([context.url]);
    const info = (await (await fetch(`${cluster.url}/cluster_info`)).json()) as {
      current_workers: { context_servers: { worker_id: string }[] };
    };
    expect(data.workers[0]!.id).toBe(info.current_workers.context_servers[0]!.worker_id);
  }, 20_000);

  test("two replicas claim distinct node ids, and their ids never collide over 100,000 each", async () => {
    const clusterName = `ids-${++clusters}`;
    const [a, b] = await Promise.all(
      [0, 1].map(() => claimNodeId({ endpoint: etcd.endpoint, clusterName, ttlMs: 2000, logger: silentLogger })),
    );
    expect(a!.nodeId).not.toBe(b!.nodeId);
    // Both replicas allocate at the same instants, at the id layout's full rate (1,024 ids per ms).
    let calls = 0;
    const now = (): number => 1_700_000_000_000 + Math.floor(calls++ / 2048);
    const first = new DisaggIdAllocator(a!.nodeId, { now });
    const second = new DisaggIdAllocator(b!.nodeId, { now });
    const seen = new Set<bigint>();
    for (let i = 0; i < 100_000; i++) {
      seen.add(first.next());
      seen.add(second.next());
    }
    expect(seen.size).toBe(200_000);
    await Promise.all([a!.release(), b!.release()]);
  });
});

describe("the proxy with etcd discovery, under load", () => {
  test("workers joining and leaving while requests run lose no request", async () => {
    const clusterName = `churn-${++clusters}`;
    await using cluster = await discoveredCluster(clusterName);
    await using context = startEmulatedWorker({ role: "context", register: register(clusterName) });
    await using steady = startEmulatedWorker({ role: "generation", register: register(clusterName), tokenMs: 2 });
    await eventually(() => cluster.proxy.app.placement.pool.isReady(), 5000);
    const loadState = { running: true };
    const statuses: number[] = [];
    const load = Array.from({ length: 4 }, async () => {
      while (loadState.running) {
        const response = await cluster.post("/v1/chat/completions", { ...chat, stream: true });
        statuses.push(response.status);
        const text = await response.text();
        if (!text.includes("[DONE]")) statuses.push(-1);
      }
    });
    const joiner = startEmulatedWorker({ role: "generation", register: register(clusterName), tokenMs: 2 });
    await eventually(() => cluster.proxy.app.placement.pool.ready("generation").length === 2, 5000);
    await eventually(() => joiner.requests.some((r) => r.phase === "generation"), 5000);
    // A graceful leave: deregister, let the proxy stop routing there, finish what runs, then stop.
    await joiner.deregister();
    await eventually(() => cluster.proxy.app.placement.pool.all("generation").length === 1, 5000);
    await eventually(() => joiner.running() === 0, 5000);
    await joiner.stop();
    const afterLeave = statuses.length;
    await eventually(() => statuses.length > afterLeave + 20, 5000);
    loadState.running = false;
    await Promise.all(load);
    expect(statuses.length).toBeGreaterThan(20);
    expect(statuses.every((status) => status === 200)).toBe(true);
    expect(steady.requests.filter((r) => r.phase === "generation").length).toBeGreaterThan(0);
    expect(context.requests.filter((r) => r.phase === "context").length).toBe(statuses.length);
  }, 20_000);
});
