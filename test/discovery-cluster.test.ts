import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { etcdClusterDiscovery, etcdRegistrar, type Discovery } from "../src/discovery/index.ts";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { memoryLogger, silentLogger } from "../src/observability/logger.ts";
import { eventLog, startEtcd, type EtcdServer } from "./support/etcd.ts";
import { eventually } from "./support/wait.ts";

const FAST = { reconnect: { initialMs: 50, maxMs: 300 } } as const;
const REGISTER = { heartbeatMs: 300, ttlMs: 2000, logger: silentLogger };

let etcd: EtcdServer;
let clusters = 0;

beforeAll(async () => {
  etcd = await startEtcd();
});

afterAll(async () => {
  await etcd[Symbol.asyncDispose]();
});

/** Each test gets its own cluster name, so tests sharing this etcd do not see each other. */
function nextCluster(): string {
  clusters += 1;
  return `cluster-${clusters}`;
}

function discoveryFor(clusterName: string, endpoint = etcd.endpoint): Discovery {
  return etcdClusterDiscovery({ endpoint, clusterName, logger: silentLogger, ...FAST });
}

function keysUnder(clusterName: string): Promise<string[]> {
  return etcd.keys(`/trtllm-disagg/${clusterName}/workers/`);
}

describe("disagg_cluster discovery", () => {
  test("workers already registered come first, then joins and leaves in the order they happen", async () => {
    const clusterName = nextCluster();
    const register = etcdRegistrar({ endpoint: etcd.endpoint, clusterName, ...REGISTER });
    await using first = startEmulatedWorker({ role: "context", register });
    await eventually(async () => (await keysUnder(clusterName)).length === 1, 5000, "the first worker's key");

    const log = eventLog();
    const discovery = discoveryFor(clusterName);
    await discovery.start(log.onEvent);
    expect(log.lines).toEqual([`add context ${first.url}`]);
    expect(discovery.status()).toMatchObject({ connected: true, lastError: undefined });

    await using second = startEmulatedWorker({ role: "generation", register });
    await log.waitForCount(2);
    await first.stop();
    await log.waitForCount(3);
    await second.stop();
    expect(await log.waitForCount(4)).toEqual([
      `add context ${first.url}`,
      `add generation ${second.url}`,
      `remove context ${first.url}`,
      `remove generation ${second.url}`,
    ]);
    expect(await keysUnder(clusterName)).toEqual([]);
    await discovery.stop();
  });

  test("a mixed worker registers under both roles, with upstream's key and value layout", async () => {
    const clusterName = nextCluster();
    const log = eventLog();
    const discovery = discoveryFor(clusterName);
    await discovery.start(log.onEvent);
    await using worker = startEmulatedWorker({
      role: "mixed",
      register: etcdRegistrar({ endpoint: etcd.endpoint, clusterName, ...REGISTER }),
    });
    expect((await log.waitForCount(2)).toSorted()).toEqual([`add context ${worker.url}`, `add generation ${worker.url}`]);

    const keys = await keysUnder(clusterName);
    expect(keys).toHaveLength(2);
    const port = worker.port;
    for (const key of keys) {
      expect(key).toMatch(
        new RegExp(`^/trtllm-disagg/${clusterName}/workers/(CONTEXT|GENERATION)-127\\.0\\.0\\.1:${port}-\\d{13}-\\d+-\\d{3}$`),
      );
      const value: unknown = JSON.parse((await etcd.get(key)) ?? "null");
      const workerId = key.split("/").at(-1);
      expect(value).toEqual({ worker_id: workerId, host: "127.0.0.1", port, role: key.includes("/CONTEXT-") ? 0 : 1 });
    }
    await discovery.stop();
  });

  test("a worker killed without deregistering is removed once its lease expires", async () => {
    const clusterName = nextCluster();
    const log = eventLog();
    const discovery = discoveryFor(clusterName);
    await discovery.start(log.onEvent);
    const ttlS = 2;
    const child = Bun.spawn(
      [
        process.execPath,
        "src/main.ts",
        "worker",
        "--role",
        "generation",
        "--port",
        "0",
        "--register",
        etcd.endpoint.replace("http:", "etcd:"),
        "--cluster-name",
        clusterName,
        "--heartbeat-interval",
        "0.3",
        "--inactive-timeout",
        String(ttlS),
      ],
      { stdout: "pipe", stderr: "pipe" },
    );
    try {
      const first = await child.stdout.getReader().read();
      const origin = new TextDecoder().decode(first.value).trim();
      if (!origin.startsWith("http://")) throw new Error(`the worker did not start: ${await new Response(child.stderr).text()}`);
      expect(await log.waitForCount(1, 10_000)).toEqual([`add generation ${origin}`]);
      // Heartbeats keep it registered well past one TTL.
      await Bun.sleep(ttlS * 1000 + 500);
      expect(log.lines).toHaveLength(1);

      child.kill("SIGKILL");
      const killedAt = performance.now();
      expect(await log.waitForCount(2, ttlS * 1000 + 3000)).toEqual([`add generation ${origin}`, `remove generation ${origin}`]);
      // etcd sweeps expired leases about every 500 ms.
      expect(performance.now() - killedAt).toBeLessThan(ttlS * 1000 + 1000);
    } finally {
      child.kill("SIGKILL");
      await discovery.stop();
    }
  }, 20_000);

  test("a throwing event handler is logged and does not disturb the worker list", async () => {
    const clusterName = nextCluster();
    const logger = memoryLogger();
    const discovery = etcdClusterDiscovery({ endpoint: etcd.endpoint, clusterName, logger, ...FAST });
    const seen: string[] = [];
    await discovery.start((event) => {
      seen.push(`${event.kind} ${event.origin}`);
      if (seen.length === 1) throw new Error("handler bug");
    });
    const client = etcd.client();
    await client.put(
      `/trtllm-disagg/${clusterName}/workers/a`,
      JSON.stringify({ worker_id: "a", host: "127.0.0.1", port: 18101, role: 0 }),
    );
    await client.put(
      `/trtllm-disagg/${clusterName}/workers/b`,
      JSON.stringify({ worker_id: "b", host: "127.0.0.1", port: 18102, role: 1 }),
    );
    await eventually(() => seen.length === 2, 5000, "both adds");
    expect(seen).toEqual(["add http://127.0.0.1:18101", "add http://127.0.0.1:18102"]);
    expect(logger.records.filter((r) => r["level"] === "error").map((r) => r["msg"])).toEqual(["A discovery event handler threw"]);
    expect(discovery.status().connected).toBe(true);
    const again = await discovery
      .start(() => {})
      .then(
        () => "started twice",
        (error: unknown) => (error instanceof Error ? error.message : "?"),
      );
    expect(again).toBe("etcd cluster discovery was already started");
    await discovery.stop();
  });

  test("start() waits for an unreachable etcd and reports why meanwhile", async () => {
    const unreachable = "http://127.0.0.1:9";
    const log = eventLog();
    const discovery = discoveryFor("nowhere", unreachable);
    let started = false;
    const starting = discovery.start(log.onEvent).then(() => (started = true));
    await eventually(() => discovery.status().lastError !== undefined, 5000, "a recorded error");
    expect(discovery.status()).toMatchObject({ connected: false, revision: undefined });
    expect(started).toBe(false);
    await discovery.stop();
    await starting;
    expect(log.lines).toEqual([]);
  });
});
