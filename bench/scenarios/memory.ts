/**
 * (c) Resident memory per open stream: streams the emulated generation worker holds silent
 * after its first token, while the proxy keeps each client alive with keepalives. RSS is read
 * before any stream is open and with each level held, after every stream saw a keepalive.
 */

import { join } from "node:path";
import type { Cluster } from "../cluster/cluster.ts";
import { spawnService } from "../cluster/service.ts";
import { rssBytes, socketCount } from "../cluster/proc-stats.ts";
import { closedLoop } from "../load/closed-loop.ts";
import { OpenStreams } from "../load/open-streams.ts";
import { endpointOf, proxyPath } from "../load/paths.ts";
import { chatStream } from "../load/workloads.ts";
import { median } from "../lib/stats.ts";

export interface MemoryPlan {
  readonly levels: readonly number[];
  /** The proxy's --keepalive-interval-ms in this scenario. */
  readonly keepaliveMs: number;
  /** BUN_CONFIG_MAX_HTTP_REQUESTS for the proxy and the reference relays. */
  readonly maxHttpRequests: number;
  readonly logDir: string;
}

export interface MemoryLevel {
  readonly streams: number;
  /** Streams with a 200, the first token relayed and at least one keepalive since. */
  readonly alive: number;
  readonly failures: number;
  readonly proxyRssBytes: number;
  readonly generationRssBytes: number;
  readonly proxySockets: number;
  /** (RSS at this level − RSS with no stream) / streams. */
  readonly proxyBytesPerStream: number;
  readonly generationBytesPerStream: number;
  readonly openSeconds: number;
}

/** The same streams through a minimal relay: the floor any Bun relay of this shape pays. */
export interface ReferenceLevel {
  readonly relay: "native" | "js";
  readonly streams: number;
  readonly alive: number;
  readonly bytesPerStream: number;
}

export interface MemoryResult {
  readonly plan: MemoryPlan;
  readonly references: readonly ReferenceLevel[];
  readonly baseline: { readonly proxyRssBytes: number; readonly generationRssBytes: number; readonly proxySockets: number };
  readonly levels: readonly MemoryLevel[];
  /** After every client left. */
  readonly after: { readonly proxyRssBytes: number; readonly proxySockets: number };
}

/** Role chunk + first token; one more frame is a keepalive. */
const FRAMES_BEFORE_SILENCE = 2;
const SILENCE_MS = 300_000;
const OPEN_TIMEOUT_MS = 90_000;

export async function runMemory(cluster: Cluster, plan: MemoryPlan): Promise<MemoryResult> {
  const proxy = endpointOf(cluster.proxy.url);
  // Warm the proxy's code paths and pools first, so the baseline is a warm process.
  const warm = Array.from({ length: 8 }, () => proxyPath(proxy, chatStream(4)));
  await closedLoop(warm, { seconds: 30, requests: 400 });
  for (const path of warm) path.close();
  await Bun.sleep(1000);
  const baseline = { proxyRssBytes: await settledRss(cluster.pids.proxy), generationRssBytes: rssBytes(cluster.pids.generation), proxySockets: socketCount(cluster.pids.proxy) };
  const streams = new OpenStreams(proxy, chatStream(8, `gen.silence_ms=${SILENCE_MS} gen.silence_after=1`));
  const levels: MemoryLevel[] = [];
  try {
    for (const level of plan.levels) {
      const started = performance.now();
      await streams.growTo(level);
      await streams.waitFor(FRAMES_BEFORE_SILENCE, OPEN_TIMEOUT_MS);
      const openSeconds = (performance.now() - started) / 1000;
      const alive = await streams.waitFor(FRAMES_BEFORE_SILENCE + 1, plan.keepaliveMs * 2 + 2000);
      const proxyRss = await settledRss(cluster.pids.proxy);
      const generationRss = rssBytes(cluster.pids.generation);
      levels.push({
        streams: level,
        alive,
        failures: streams.failures,
        proxyRssBytes: proxyRss,
        generationRssBytes: generationRss,
        proxySockets: socketCount(cluster.pids.proxy),
        proxyBytesPerStream: (proxyRss - baseline.proxyRssBytes) / level,
        generationBytesPerStream: (generationRss - baseline.generationRssBytes) / level,
        openSeconds,
      });
    }
  } finally {
    streams.closeAll();
  }
  await Bun.sleep(3000);
  const after = { proxyRssBytes: await settledRss(cluster.pids.proxy), proxySockets: socketCount(cluster.pids.proxy) };
  const references: ReferenceLevel[] = [];
  for (const relay of ["native", "js"] as const) references.push(await referenceLevel(cluster, plan, relay));
  return { plan, references, baseline, levels, after };
}

async function referenceLevel(cluster: Cluster, plan: MemoryPlan, relay: "native" | "js"): Promise<ReferenceLevel> {
  const service = await spawnService({
    name: `memory-reference-${relay}`,
    cmd: [process.execPath, join(import.meta.dir, "..", "cluster", "reference-relay.ts"), cluster.context.url, cluster.generation.url, relay],
    env: { BUN_CONFIG_MAX_HTTP_REQUESTS: String(plan.maxHttpRequests) },
    logDir: plan.logDir,
  });
  const streamsCount = plan.levels[0] ?? 0;
  const streams = new OpenStreams(endpointOf(service.url), chatStream(8, `gen.silence_ms=${SILENCE_MS} gen.silence_after=1`));
  try {
    const warm = Array.from({ length: 8 }, () => proxyPath(endpointOf(service.url), chatStream(4)));
    await closedLoop(warm, { seconds: 30, requests: 400 });
    for (const path of warm) path.close();
    await Bun.sleep(1000);
    const baseline = await settledRss(service.pid);
    await streams.growTo(streamsCount);
    const alive = await streams.waitFor(FRAMES_BEFORE_SILENCE, OPEN_TIMEOUT_MS);
    await Bun.sleep(plan.keepaliveMs);
    return { relay, streams: streamsCount, alive, bytesPerStream: ((await settledRss(service.pid)) - baseline) / streamsCount };
  } finally {
    streams.closeAll();
    await service.stop();
  }
}

/** Median of a few readings, so one allocation burst does not decide the figure. */
async function settledRss(pid: number): Promise<number> {
  const readings: number[] = [];
  for (let i = 0; i < 5; i++) {
    readings.push(rssBytes(pid));
    await Bun.sleep(300);
  }
  return median(readings);
}
