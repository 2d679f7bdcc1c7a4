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
import { startCluster } from "./support/cluster.ts";
import { freePort } from "./support/etcd.ts";
import { infoWorker, type InfoWorker } from "./support/info-worker.ts";

const MAIN = join(import.meta.dir, "..", "src", "main.ts");
const children: Bun.Subprocess[] = [];
const servers: Bun.Server<undefined>[] = [];

afterAll(async () => {
  for (const child of children) child.kill("SIGKILL");
  await Promise.all(servers.map((server) => server.stop(true)));
});

/** A worker answering what start-up and health checks ask (test/support/info-worker.ts), stopped after the file. */
function worker(hostile: boolean): InfoWorker {
  const made = infoWorker(hostile);
  servers.push(made.server);
  return made;
}

interface Run {
  /** The proxy's peak resident set (VmHWM), KiB. */
  peakRssKiB: number;
  /** The slowest /livez (or /health) answer while the workers joined and for 50 /livez polls after, ms. */
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
async function run(target: InfoWorker): Promise<Run> {
  const port = freePort();
  const origin = `http://127.0.0.1:${target.server.port}`;
  const proxy = Bun.spawn(
    [
      process.execPath,
      MAIN,
      "serve",
      "--host",
      "127.0.0.1",
      "--port",
      String(port),
      "--context",
      origin,
      "--generation",
      origin,
      "--log-level",
      "warn",
    ],
    {
      stdout: "pipe",
      stderr: "ignore",
    },
  );
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
    // /health is as cheap to answer: a stall that lands on it counts too.
    const asked = performance.now();
    const health = await fetch(`${url}/health`);
    await health.arrayBuffer();
    worstLivezMs = Math.max(worstLivezMs, performance.now() - asked);
    if (health.status === 200) break;
  }
  const joinMs = performance.now() - releasedAt;
  // And after it: the collector's work on what the join left stalled /livez for seconds.
  for (let i = 0; i < 50; i++) {
    const started = performance.now();
    await (await fetch(`${url}/livez`)).arrayBuffer();
    worstLivezMs = Math.max(worstLivezMs, performance.now() - started);
  }
  const status = readFileSync(`/proc/${proxy.pid}/status`, "utf8");
  const peakRssKiB = Number(/VmHWM:\s+(\d+)/.exec(status)?.[1]);
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const clusterInfo = await (await fetch(`${url}/cluster_info`)).text();
  proxy.kill("SIGKILL");
  await proxy.exited;
  const log = await new Response(proxy.stdout).text();
  return { peakRssKiB, worstLivezMs, livezPolls, joinMs, metrics, clusterInfo, log };
}

test("a worker serving 32 MiB of [ as /server_info and a 4 MiB version leaves the proxy's RSS and /livez as a well-behaved one does, and its version shown nowhere", async () => {
  const normal = await run(worker(false));
  const hostile = await run(worker(true));
  const figures = {
    normal: { ...normal, metrics: undefined, clusterInfo: undefined, log: undefined },
    hostile: { ...hostile, metrics: undefined, clusterInfo: undefined, log: undefined },
  };
  console.log(JSON.stringify(figures));
  // Before: 2.5 GB peak RSS against ~60 MB, a 6–7 s /livez stall (bench/worker-info-bounds.ts).
  expect(hostile.peakRssKiB / normal.peakRssKiB).toBeLessThan(1.5);
  expect(hostile.worstLivezMs / Math.max(normal.worstLivezMs, 5)).toBeLessThan(20);
  expect(hostile.log).toContain("worker /server_info refused");
  expect(hostile.log).toContain("worker /version refused");
  expect(hostile.metrics).not.toContain("xxxxxxxx");
  expect(hostile.metrics.length / normal.metrics.length).toBeLessThan(1.5);
  expect(hostile.clusterInfo).not.toContain("xxxxxxxx");
  expect(normal.clusterInfo).toContain('"version":"1.3.0rc28"');
}, 120_000);

test("a version that is no short PEP 440 string (512 KiB, under the read bound) reads unknown in /metrics, /cluster_info, the dashboard and the log", async () => {
  const version = `1.3.0rc28${"<b>x</b>".repeat(64 * 1024)}`;
  const odd = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/version") return Response.json({ version });
      if (path === "/server_info") return Response.json({});
      return new Response(null, { status: 200 });
    },
  });
  servers.push(odd);
  const origin = `http://127.0.0.1:${odd.port}`;
  await using cluster = await startCluster({
    contexts: [],
    generations: [],
    config: { contextServers: [origin], generationServers: [origin] },
  });
  const shown = [
    await (await fetch(`${cluster.url}/metrics`)).text(),
    await (await fetch(`${cluster.url}/cluster_info`)).text(),
    await (await fetch(`${cluster.url}/dashboard/data`)).text(),
    JSON.stringify(cluster.logs),
  ];
  for (const text of shown) expect(text.includes("<b>x</b>")).toBe(false);
  expect(
    cluster.logs.find((record) => record["msg"] === "worker version ignored: not a PEP 440 version of at most 64 characters"),
  ).toMatchObject({ worker: origin, length: version.length });
  expect(shown[0]).toContain('version="unknown"');
});
