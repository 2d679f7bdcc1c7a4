import { describe, expect, test } from "bun:test";
import { etcdClusterDiscovery, registerWorker } from "../src/discovery/index.ts";
import { memoryLogger, silentLogger } from "../src/observability/logger.ts";
import { eventLog, freePort, startEtcd } from "./support/etcd.ts";
import { eventually } from "./support/wait.ts";

const FAST = { reconnect: { initialMs: 50, maxMs: 300 }, livenessIntervalMs: 500 } as const;

function workerValue(port: number, role: 0 | 1): string {
  return JSON.stringify({ worker_id: `w${port}`, host: "127.0.0.1", port, role });
}

describe("disagg_cluster discovery across etcd outages", () => {
  test("etcd restarted mid-run: disconnected, then reconnected with no remove and the worker added meanwhile", async () => {
    await using etcd = await startEtcd();
    const clusterName = "restart";
    const log = eventLog();
    const logger = memoryLogger();
    const discovery = etcdClusterDiscovery({ endpoint: etcd.endpoint, clusterName, logger, ...FAST });
    const register = {
      endpoint: etcd.endpoint,
      clusterName,
      heartbeatMs: 300,
      ttlMs: 5000,
      logger: silentLogger,
      reconnect: { maxMs: 300 },
    };
    const steady = registerWorker({ ...register, role: "context", host: "127.0.0.1", port: 18001 });
    let late: { stop(): Promise<void> } | undefined;
    try {
      await discovery.start(log.onEvent);
      await log.waitForCount(1);
      const revisionBefore = discovery.status().revision;

      await etcd.stop();
      await eventually(() => !discovery.status().connected, 5000, "discovery to notice etcd is gone");
      expect(discovery.status().lastError).toBeString();
      // A worker that starts while etcd is down keeps trying to register.
      late = registerWorker({ ...register, role: "generation", host: "127.0.0.1", port: 18002 });

      await etcd.start();
      await log.waitForCount(2, 10_000);
      await eventually(() => discovery.status().connected, 5000, "reconnected");
      expect(log.lines).toEqual(["add context http://127.0.0.1:18001", "add generation http://127.0.0.1:18002"]);
      expect(BigInt(discovery.status().revision ?? "0")).toBeGreaterThan(BigInt(revisionBefore ?? "0"));
      expect(discovery.status().lastError).toBeUndefined();
      expect(logger.records.some((r) => r["msg"] === "etcd unreachable; keeping the last known workers")).toBe(true);
    } finally {
      await discovery.stop();
      await Promise.all([steady.stop(), late?.stop()]);
    }
  }, 30_000);

  test("an etcd that stops answering without closing the watch is noticed by the liveness check", async () => {
    await using etcd = await startEtcd();
    const prefix = "/trtllm-disagg/frozen/workers/";
    const log = eventLog();
    const discovery = etcdClusterDiscovery({ endpoint: etcd.endpoint, clusterName: "frozen", logger: silentLogger, ...FAST });
    try {
      await discovery.start(log.onEvent);
      await etcd.client().put(`${prefix}a`, workerValue(18031, 0));
      await log.waitForCount(1);
      etcd.freeze();
      await eventually(() => !discovery.status().connected, 5000, "disconnected while etcd is frozen");
      etcd.thaw();
      await eventually(() => discovery.status().connected, 10_000, "reconnected");
      await etcd.client().put(`${prefix}b`, workerValue(18032, 1));
      expect(await log.waitForCount(2, 5000)).toEqual(["add context http://127.0.0.1:18031", "add generation http://127.0.0.1:18032"]);
    } finally {
      etcd.thaw();
      await discovery.stop();
    }
  }, 30_000);

  test("a watch resumed past a compaction reads the prefix again and emits only the difference", async () => {
    await using etcd = await startEtcd();
    const prefix = "/trtllm-disagg/compact/workers/";
    await etcd.client().put(`${prefix}a`, workerValue(18011, 0));
    await etcd.client().put(`${prefix}b`, workerValue(18012, 1));
    const log = eventLog();
    const logger = memoryLogger();
    const discovery = etcdClusterDiscovery({ endpoint: etcd.endpoint, clusterName: "compact", logger, ...FAST });
    try {
      await discovery.start(log.onEvent);
      expect(log.lines).toEqual(["add context http://127.0.0.1:18011", "add generation http://127.0.0.1:18012"]);

      // Change the store where this discovery cannot see it (another client port), and compact
      // away the revisions it would resume from.
      await etcd.stop();
      await eventually(() => !discovery.status().connected, 5000, "disconnected");
      await etcd.start({ clientPort: freePort() });
      await etcd.client().delete(`${prefix}a`);
      await etcd.client().put(`${prefix}c`, workerValue(18013, 0));
      await etcd.client().put(`${prefix}c`, workerValue(18013, 0));
      const revision = await etcd.compact();
      await etcd.stop();
      // While etcd is away nothing is removed.
      expect(log.lines).toHaveLength(2);

      await etcd.start();
      expect(await log.waitForCount(4, 10_000)).toEqual([
        "add context http://127.0.0.1:18011",
        "add generation http://127.0.0.1:18012",
        "remove context http://127.0.0.1:18011",
        "add context http://127.0.0.1:18013",
      ]);
      await eventually(() => discovery.status().connected, 5000, "reconnected");
      expect(discovery.status().revision).toBe(revision);
      expect(logger.records.filter((r) => r["msg"] === "etcd prefix read")).toHaveLength(2);
      expect(logger.records.some((r) => r["msg"] === "etcd compacted the watched revisions; reading the prefix again")).toBe(true);
    } finally {
      await discovery.stop();
    }
  }, 30_000);

  test("a watch broken by an outage resumes from the next revision and replays every change made meanwhile", async () => {
    await using etcd = await startEtcd();
    const prefix = "/trtllm-disagg/resume/workers/";
    const log = eventLog();
    const logger = memoryLogger();
    const discovery = etcdClusterDiscovery({ endpoint: etcd.endpoint, clusterName: "resume", logger, ...FAST });
    try {
      await discovery.start(log.onEvent);
      await etcd.client().put(`${prefix}a`, workerValue(18021, 0));
      await log.waitForCount(1);
      await etcd.stop();
      await eventually(() => !discovery.status().connected, 5000, "disconnected");
      // Changes made elsewhere while this client was away, not compacted: the resumed watch replays them.
      await etcd.start({ clientPort: freePort() });
      await etcd.client().put(`${prefix}b`, workerValue(18022, 1));
      await etcd.client().delete(`${prefix}b`);
      await etcd.client().put(`${prefix}c`, workerValue(18023, 1));
      await etcd.stop();
      await etcd.start();
      expect(await log.waitForCount(4, 10_000)).toEqual([
        "add context http://127.0.0.1:18021",
        "add generation http://127.0.0.1:18022",
        "remove generation http://127.0.0.1:18022",
        "add generation http://127.0.0.1:18023",
      ]);
      // Replayed by the resumed watch, not found by reading the prefix again.
      expect(logger.records.filter((r) => r["msg"] === "etcd prefix read")).toHaveLength(1);
    } finally {
      await discovery.stop();
    }
  }, 30_000);
});
