import { describe, expect, test } from "bun:test";
import { etcdMetadataDiscovery, type DiscoveryEvent } from "../src/discovery/index.ts";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { memoryLogger, silentLogger } from "../src/observability/logger.ts";
import { eventLog, freePort, startEtcd, type EtcdServer } from "./support/etcd.ts";
import { eventually } from "./support/wait.ts";

/** What a trtllm-serve worker started with `-m` puts under `trtllm/<llm_id>`. */
function metadata(url: string, role: string, key: "server_role" | "server_type" = "server_role"): string {
  return JSON.stringify({ model: "m", version: "1.0", timestamp: "2026-01-01T00:00:00", [key]: role, url });
}

function keys(etcd: EtcdServer): Promise<string[]> {
  return etcd.keys("trtllm/");
}

const OPTIONS = { healthCheckTimeoutMs: 500, refreshIntervalMs: 200, reconnect: { initialMs: 50, maxMs: 300 } } as const;

describe("metadata-server discovery", () => {
  test("live servers of both roles are added, dead ones deleted from etcd, other roles ignored", async () => {
    await using etcd = await startEtcd();
    await using context = startEmulatedWorker({ role: "context" });
    await using generation = startEmulatedWorker({ role: "generation" });
    await using encoder = startEmulatedWorker({ role: "context" });
    const dead = `http://127.0.0.1:${freePort()}`;
    await etcd.client().put("trtllm/ctx-1", metadata(context.url, "CONTEXT"));
    await etcd.client().put("trtllm/gen-1", metadata(generation.url, "generation", "server_type"));
    await etcd.client().put("trtllm/enc-1", metadata(encoder.url, "MM_ENCODER"));
    await etcd.client().put("trtllm/dead-1", metadata(dead, "CONTEXT"));
    await etcd.client().put("trtllm/no-url", JSON.stringify({ server_role: "CONTEXT" }));
    await etcd.client().put("other/ctx", metadata(context.url, "CONTEXT"));

    const log = eventLog();
    const logger = memoryLogger();
    const discovery = etcdMetadataDiscovery({ endpoint: etcd.endpoint, logger, ...OPTIONS });
    try {
      await discovery.start(log.onEvent);
      expect(log.lines).toEqual([`add context ${context.url}`, `add generation ${generation.url}`]);
      expect(await keys(etcd)).toEqual(["trtllm/ctx-1", "trtllm/enc-1", "trtllm/gen-1", "trtllm/no-url"]);
      expect(logger.records.find((r) => r["msg"] === "Removing dead server from metadata server")).toMatchObject({
        key: "trtllm/dead-1",
        url: dead,
      });
      expect(discovery.status()).toMatchObject({ connected: true, lastError: undefined });

      // A server that dies is removed at the next poll, and its key deleted.
      await context.stop();
      expect(await log.waitForCount(3)).toEqual([
        `add context ${context.url}`,
        `add generation ${generation.url}`,
        `remove context ${context.url}`,
      ]);
      await eventually(async () => !(await keys(etcd)).includes("trtllm/ctx-1"), 5000, "the dead server's key deleted");
      // A new one joins at the next poll.
      await using later = startEmulatedWorker({ role: "context" });
      await etcd.client().put("trtllm/ctx-2", metadata(later.url, "context"));
      expect((await log.waitForCount(4)).at(-1)).toBe(`add context ${later.url}`);
    } finally {
      await discovery.stop();
    }
  }, 20_000);

  test("while etcd is down the last known servers are kept, and polling resumes when it is back", async () => {
    await using etcd = await startEtcd();
    await using worker = startEmulatedWorker({ role: "generation" });
    await etcd.client().put("trtllm/gen", metadata(worker.url, "GENERATION"));
    const log = eventLog();
    const discovery = etcdMetadataDiscovery({ endpoint: etcd.endpoint, logger: silentLogger, ...OPTIONS });
    try {
      await discovery.start(log.onEvent);
      expect(log.lines).toEqual([`add generation ${worker.url}`]);
      await etcd.stop();
      await eventually(() => !discovery.status().connected, 5000, "disconnected");
      await etcd.start();
      await eventually(() => discovery.status().connected, 10_000, "reconnected");
      expect(log.lines).toEqual([`add generation ${worker.url}`]);
    } finally {
      await discovery.stop();
    }
  }, 20_000);
});

describe("metadata-server discovery: versions", () => {
  test("a registration's version travels with its add event", async () => {
    await using etcd = await startEtcd();
    await using worker = startEmulatedWorker({ role: "context" });
    await etcd.client().put("trtllm/ctx", JSON.stringify({ model: "m", version: "1.3.0rc18", server_role: "context", url: worker.url }));
    const events: DiscoveryEvent[] = [];
    const discovery = etcdMetadataDiscovery({ endpoint: etcd.endpoint, logger: silentLogger, ...OPTIONS });
    try {
      await discovery.start((event) => events.push(event));
      expect(events).toEqual([{ kind: "add", role: "context", origin: worker.url, version: "1.3.0rc18" }]);
    } finally {
      await discovery.stop();
    }
  }, 20_000);
});
