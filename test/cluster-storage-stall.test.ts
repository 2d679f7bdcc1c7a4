/**
 * A stall of the proxy must not expire live workers: upstream's three outage tests of the HTTP
 * cluster storage (tests/unittest/disaggregated/test_cluster_storage.py, the version citing
 * nvbugs/6786712: test_expiry_does_not_charge_the_storage_own_outage,
 * test_queued_http_refresh_settles_outage_before_ttl_operations,
 * test_consecutive_outages_are_not_charged_to_ttl), with their timings (ttl 2 s, a refresh
 * every second, 2.5 s stalls) and every assertion, run against the compiled binary. Upstream
 * blocks its own in-process loop; here the whole proxy process is paused (SIGSTOP/SIGCONT), as
 * a loaded host, a paused container or a long GC would.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBinary, spawnBinary, spawnBinaryWithLog, type Child } from "./e2e/binary-harness.ts";
import { freePort } from "./support/etcd.ts";

const children: Child[] = [];
const dir = mkdtempSync(join(tmpdir(), "disagg-stall-"));
/** upstream's `storage._check_expired_interval`: the proxy sweeps expired keys every second too. */
const SWEEP_S = 1;
const TTL_S = 2;
const REFRESH_S = 1;
const BLOCK_S = 2.5;

beforeAll(async () => {
  await ensureBinary();
}, 240_000);

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
});

interface StoreProxy {
  readonly url: string;
  readonly child: Child;
  readonly log: { until(done: (line: string) => boolean): Promise<string[]> };
}

/** The binary serving an http:// cluster storage on its own port, as disagg_cluster makes it. */
async function storeProxy(): Promise<StoreProxy> {
  const port = freePort();
  const config = join(dir, `config-${port}.yaml`);
  writeFileSync(
    config,
    [
      "hostname: 127.0.0.1",
      `port: ${port}`,
      "disagg_cluster:",
      `  cluster_uri: http://127.0.0.1:${port}`,
      "  cluster_name: stall",
      "  heartbeat_interval_sec: 1",
      `  inactive_timeout_sec: ${TTL_S}`,
      "  minimal_instances:",
      "    context_servers: 1",
      "    generation_servers: 1",
      "",
    ].join("\n"),
  );
  // With a fixed port the first line is a log line, not the URL.
  const { child, log } = await spawnBinaryWithLog(["serve", "-c", config, "--log-level", "info"], children);
  const url = `http://127.0.0.1:${port}`;
  await log.until((line) => line.includes('"listening"') || line.includes("listening"));
  return { url, child, log };
}

const sleep = (seconds: number): Promise<void> => Bun.sleep(seconds * 1000);

const result = async (response: Response): Promise<unknown> => ((await response.json()) as { result: unknown }).result;

/** The calls of upstream's HttpClusterStorageClient (cluster_storage.py), over HTTP. */
function client(url: string) {
  return {
    set: async (key: string, value: string, ttl: number) =>
      result(
        await fetch(`${url}/set`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ key, value, ttl, overwrite_if_exists: true }),
        }),
      ),
    get: async (key: string) => result(await fetch(`${url}/get?key=${encodeURIComponent(key)}`)),
    expire: async (key: string, ttl: number) => result(await fetch(`${url}/expire?key=${encodeURIComponent(key)}&ttl=${ttl}`)),
  };
}

/** upstream's refresh_periodically: a refresh every REFRESH_S seconds until stopped. */
function refresher(store: ReturnType<typeof client>, key: string): { stop(): Promise<void> } {
  const stopped = new AbortController();
  const loop = (async () => {
    while (!stopped.signal.aborted) {
      await sleep(REFRESH_S);
      if (!stopped.signal.aborted) await store.expire(key, TTL_S);
    }
  })();
  return {
    async stop() {
      stopped.abort();
      await loop;
    },
  };
}

async function paused(child: Child, seconds: number): Promise<void> {
  child.kill("SIGSTOP");
  await sleep(seconds);
  child.kill("SIGCONT");
}

describe("the HTTP cluster storage across stalls of the proxy (upstream's outage tests, on the binary)", () => {
  test.concurrent("expiry does not charge the storage's own outage: a refreshing key outlives a stall longer than its TTL, then expires once refreshes stop", async () => {
    const proxy = await storeProxy();
    const store = client(proxy.url);
    const key = "outage_key";
    expect(await store.set(key, "worker", TTL_S)).toBe(true);
    const refresh = refresher(store, key);
    await sleep(REFRESH_S + 0.2);
    await paused(proxy.child, BLOCK_S);
    await sleep(SWEEP_S + 0.5);
    expect(await store.get(key)).toBe("worker");
    await refresh.stop();
    await sleep(TTL_S + SWEEP_S + 0.5);
    expect(await store.get(key)).toBeNull();
    const metrics = await (await fetch(`${proxy.url}/prometheus/metrics`)).text();
    expect(Number(/^disagg_proxy_store_stall_seconds_count (\d+)/m.exec(metrics)?.[1])).toBeGreaterThanOrEqual(1);
    const lines = await proxy.log.until((line) => line.includes("the proxy stalled"));
    expect(lines.at(-1)).toContain("stall_ms");
  }, 30_000);

  test.concurrent("a refresh queued behind a stall settles the outage before it refreshes, and extends the TTL only once", async () => {
    const proxy = await storeProxy();
    const store = client(proxy.url);
    const key = "queued_outage_key";
    expect(await store.set(key, "worker", TTL_S)).toBe(true);
    proxy.child.kill("SIGSTOP");
    const queued = store.expire(key, TTL_S);
    await sleep(BLOCK_S);
    proxy.child.kill("SIGCONT");
    expect(await queued).toBe(true);
    expect(await store.get(key)).toBe("worker");
    await sleep(TTL_S + SWEEP_S + 0.5);
    expect(await store.get(key)).toBeNull();
  }, 30_000);

  test.concurrent("two stalls in a row, the first settled by a read, are not charged to a refreshing key; it still expires once refreshes stop", async () => {
    const proxy = await storeProxy();
    const store = client(proxy.url);
    const key = "consecutive_outage_key";
    expect(await store.set(key, "worker", TTL_S)).toBe(true);
    const refresh = refresher(store, key);
    await sleep(REFRESH_S + 0.2);
    proxy.child.kill("SIGSTOP");
    await sleep(BLOCK_S);
    proxy.child.kill("SIGCONT");
    const read = store.get(key);
    await paused(proxy.child, BLOCK_S);
    expect(await read).toBe("worker");
    expect(await store.get(key)).toBe("worker");
    await refresh.stop();
    await sleep(TTL_S + SWEEP_S + 0.5);
    expect(await store.get(key)).toBeNull();
  }, 30_000);

  test.concurrent("a registered worker stays in /cluster_info across a 3 s stall with a 2 s TTL, and is dropped within TTL plus the sweep once its heartbeats stop", async () => {
    const proxy = await storeProxy();
    const worker = await spawnBinary(
      [
        "worker",
        "--role",
        "context",
        "--port",
        "0",
        "--register",
        proxy.url,
        "--cluster-name",
        "stall",
        "--heartbeat-interval",
        "1",
        "--inactive-timeout",
        String(TTL_S),
      ],
      children,
    );
    const listed = async (): Promise<boolean> => {
      const info = (await (await fetch(`${proxy.url}/cluster_info`)).json()) as { server_lists: { context: string[] } };
      return info.server_lists.context.some((server) => worker.url.endsWith(server.replace(/^https?:\/\//, "")));
    };
    while (!(await listed())) await sleep(0.05);
    await paused(proxy.child, 3);
    await sleep(SWEEP_S + 0.5);
    expect(await listed()).toBe(true);
    worker.child.kill("SIGKILL");
    await sleep(TTL_S + SWEEP_S + 0.5);
    expect(await listed()).toBe(false);
  }, 30_000);
});
