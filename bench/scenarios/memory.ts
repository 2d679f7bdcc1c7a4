/**
 * (c) Resident memory per open stream: streams the emulated generation worker holds silent
 * after its first token, while the proxy keeps each client alive with keepalives. RSS is read
 * before any stream is open and with each level held, after every stream saw a keepalive.
 */

import { spawnFloor, type Cluster } from "../cluster/cluster.ts";
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

/**
 * The same streams through the floor relay (bench/cluster/floor-relay.ts): `native` is the
 * floor (Bun pipes the upstream body); `js` reads it through a JS pull stream, as any relay
 * that watches frames or sends keepalives must.
 */
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
  const baseline = {
    proxyRssBytes: await settledRss(cluster.pids.proxy),
    generationRssBytes: rssBytes(cluster.pids.generation),
    proxySockets: socketCount(cluster.pids.proxy),
  };
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
  // The floor at every level; the JS-stream variant at the first, to show what reading the body in JS costs.
  const references = [
    ...(await referenceLevels(cluster, plan, "native", plan.levels)),
    ...(await referenceLevels(cluster, plan, "js", plan.levels.slice(0, 1))),
  ];
  return { plan, references, baseline, levels, after };
}

async function referenceLevels(
  cluster: Cluster,
  plan: MemoryPlan,
  relay: "native" | "js",
  levels: readonly number[],
): Promise<ReferenceLevel[]> {
  const service = await spawnFloor(
    { name: "memory", logDir: plan.logDir, maxHttpRequests: plan.maxHttpRequests },
    cluster.context.url,
    cluster.generation.url,
    relay,
  );
  const streams = new OpenStreams(endpointOf(service.url), chatStream(8, `gen.silence_ms=${SILENCE_MS} gen.silence_after=1`));
  try {
    const warm = Array.from({ length: 8 }, () => proxyPath(endpointOf(service.url), chatStream(4)));
    await closedLoop(warm, { seconds: 30, requests: 400 });
    for (const path of warm) path.close();
    await Bun.sleep(1000);
    const baseline = await settledRss(service.pid);
    const out: ReferenceLevel[] = [];
    for (const level of levels) {
      await streams.growTo(level);
      const alive = await streams.waitFor(FRAMES_BEFORE_SILENCE, OPEN_TIMEOUT_MS);
      // As long as the proxy's streams were held before their reading (one keepalive interval).
      await Bun.sleep(plan.keepaliveMs);
      out.push({ relay, streams: level, alive, bytesPerStream: ((await settledRss(service.pid)) - baseline) / level });
    }
    return out;
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
