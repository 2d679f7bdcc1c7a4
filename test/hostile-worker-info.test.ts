/**
 * Issue #24, item 3: the proxy's own reads of a worker (/server_info, /version) are bounded as
 * a model answer is. A worker whose /server_info was 32 MiB of `[` took the proxy to 2.3–5 GB
 * RSS and stalled /livez 3.8–5.3 s; a long version string was repeated in every /metrics
 * scrape, /cluster_info and to each dashboard viewer. The proxy runs as its own process here,
 * so its peak RSS is its own; figures are compared with the same proxy joining a well-behaved
 * worker (ratios, not absolute times).
 */

import { afterAll, expect, test } from "bun:test";
import { join } from "node:path";
import { readFileSync } from "node:fs";
import { freePort } from "./support/etcd.ts";

const MAIN = join(import.meta.dir, "..", "src", "main.ts");
const MiB = 1024 * 1024;
const children: Bun.Subprocess[] = [];
const servers: Bun.Server<undefined>[] = [];

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await Promise.all(servers.map((server) => server.stop(true)));
});

/** A long version that is read whole (under the read bound) but is no PEP 440 version. */
const LONG_VERSION = `1.3.0rc28${"x".repeat(512 * 1024)}`;

interface TestWorker {
  readonly server: Bun.Server<undefined>;
  /** /server_info is held until this is called, so the proxy's /livez is being polled when it arrives. */
  release(): void;
}

/** A worker answering what start-up and health checks ask; hostile: 32 MiB of `[` as /server_info (chunked, no length) and a long version. */
function worker(hostile: boolean): TestWorker {
  const piece = new Uint8Array(MiB).fill(0x5b);
  const { promise: released, resolve: release } = Promise.withResolvers<void>();
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/server_info") await released;
      if (path === "/server_info" && hostile) {
        let sent = 0;
        const body = new ReadableStream<Uint8Array>({
          pull(controller) {
            if (sent++ === 32) controller.close();
            else controller.enqueue(piece);
          },
        });
        return new Response(body, { headers: { "content-type": "application/json" } });
      }
      if (path === "/server_info") return Response.json({ disaggregated_params: {} });
      if (path === "/version") return Response.json({ version: hostile ? LONG_VERSION : "1.3.0rc28" });
      return new Response(null, { status: 200 });
    },
  });
  servers.push(server);
  return { server, release };
}

interface Run {
  /** The proxy's peak resident set (VmHWM), KiB. */
  peakRssKiB: number;
  /** The slowest /livez answer while the workers joined, ms. */
  worstLivezMs: number;
  livezPolls: number;
  /** From /server_info's release to /health 200, ms (figures only). */
  joinMs: number;
  metrics: string;
  clusterInfo: string;
  /** Its log (JSON lines on stdout). */
  log: string;
}

/** Starts a proxy in front of `target` (both roles), polls /livez back to back until the workers joined, then reads its figures. */
async function run(target: TestWorker): Promise<Run> {
  const port = freePort();
  const origin = `http://127.0.0.1:${target.server.port}`;
  const proxy = Bun.spawn([process.execPath, MAIN, "serve", "--host", "127.0.0.1", "--port", String(port), "--context", origin, "--generation", origin, "--log-level", "warn"], {
    stdout: "pipe",
    stderr: "ignore",
  });
  children.push(proxy);
  const url = `http://127.0.0.1:${port}`;
  let worstLivezMs = 0;
  let livezPolls = 0;
  let releasedAt = 0;
  const deadline = performance.now() + 60_000;
  for (;;) {
    if (performance.now() > deadline) throw new Error("the workers never joined");
    const started = performance.now();
    const live = await fetch(`${url}/livez`).catch(() => undefined);
    if (live === undefined) {
      await Bun.sleep(20);
      continue;
    }
    await live.arrayBuffer();
    worstLivezMs = Math.max(worstLivezMs, performance.now() - started);
    livezPolls++;
    // The join starts once /livez has answered a few times.
    if (livezPolls === 10) {
      target.release();
      releasedAt = performance.now();
    }
    const health = await fetch(`${url}/health`);
    if (health.status === 200) break;
  }
  const joinMs = performance.now() - releasedAt;
  const status = readFileSync(`/proc/${proxy.pid}/status`, "utf8");
  const peakRssKiB = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1]);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const clusterInfo = await (await fetch(`${url}/cluster_info`)).text();
  proxy.kill("SIGKILL");
  await proxy.exited;
  const log = await new Response(proxy.stdout).text();
  return { peakRssKiB, worstLivezMs, livezPolls, joinMs, metrics, clusterInfo, log };
}

test("a worker serving 32 MiB of [ as /server_info and a 512 KiB version leaves the proxy's RSS and /livez as a well-behaved one does, and its version shown nowhere", async () => {
  const normal = await run(worker(false));
  const hostile = await run(worker(true));
  const figures = { normal: { ...normal, metrics: undefined, clusterInfo: undefined, log: undefined }, hostile: { ...hostile, metrics: undefined, clusterInfo: undefined, log: undefined } };
  console.log(JSON.stringify(figures));
  // Before: 2.3–5 GB peak RSS against ~80 MB, a 3.8–5.3 s /livez stall.
  expect(hostile.peakRssKiB / normal.peakRssKiB).toBeLessThan(1.5);
  expect(hostile.worstLivezMs / Math.max(normal.worstLivezMs, 5)).toBeLessThan(20);
  expect(hostile.log).toContain("worker /server_info refused");
  expect(hostile.log).toContain("worker version ignored");
  expect(hostile.metrics).not.toContain("xxxxxxxx");
  expect(hostile.metrics.length / normal.metrics.length).toBeLessThan(1.5);
  expect(hostile.clusterInfo).not.toContain("xxxxxxxx");
  expect(normal.clusterInfo).toContain('"version":"1.3.0rc28"');
}, 120_000);
