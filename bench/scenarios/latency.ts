/**
 * (a) Added latency and CPU of a non-streamed chat request: through the proxy, through the
 * floor relay (the least a two-leg Bun proxy can do), and the two worker calls made in
 * sequence by the load generator, in the same rotating rounds, at several concurrencies
 * (closed loop: each user sends its next request when its previous answer is complete).
 */

import type { Cluster } from "../cluster/cluster.ts";
import type { Service } from "../cluster/service.ts";
import { alternateRounds, cpuPerRequest, foreignLoad, medianCpuPerRequest, type Kind, type Tally } from "../load/ab-rounds.ts";
import { directPath, endpointOf, newIds, proxyPath, type Path } from "../load/paths.ts";
import { chatJson } from "../load/workloads.ts";
import { summarize, type Summary } from "../lib/stats.ts";

export interface LatencyPlan {
  readonly concurrencies: readonly number[];
  readonly rounds: number;
  readonly roundSeconds: number;
  readonly warmupSeconds: number;
  /** Output tokens per answer. */
  readonly tokens: number;
}

export interface PathFigures {
  readonly latencyUs: Summary;
  readonly requestsPerSecond: number;
  readonly ok: number;
  readonly errors: number;
  readonly errorSamples: readonly string[];
  /** CPU µs per successful request, per process, over all rounds. */
  readonly cpuUsPerRequest: Record<string, number>;
  /** The relay's (proxy's or floor's) CPU µs per request: the median over rounds; NaN for direct. */
  readonly relayCpuUs: number;
  /** Share of the machine's cores used by processes outside the benchmark meanwhile. */
  readonly foreignLoad: number;
}

export interface LatencyPoint {
  readonly concurrency: number;
  readonly direct: PathFigures;
  readonly proxy: PathFigures;
  readonly floor: PathFigures;
  /** Proxy percentile minus direct percentile. */
  readonly addedP50Us: number;
  readonly addedP99Us: number;
  /** Floor p50 minus direct p50. */
  readonly floorAddedP50Us: number;
  /** Proxy CPU per request over the floor's (medians over rounds). */
  readonly cpuOverFloor: number;
}

export async function runLatency(cluster: Cluster, plan: LatencyPlan, cores: number): Promise<LatencyPoint[]> {
  const points: LatencyPoint[] = [];
  for (const concurrency of plan.concurrencies) points.push(await measurePoint(cluster, plan, concurrency, cores));
  return points;
}

async function measurePoint(cluster: Cluster, plan: LatencyPlan, concurrency: number, cores: number): Promise<LatencyPoint> {
  const workload = chatJson(plan.tokens);
  const ids = newIds();
  const users: Record<Exclude<Kind, "floor-js">, Path[]> = {
    direct: Array.from({ length: concurrency }, () =>
      directPath(endpointOf(cluster.context.url), endpointOf(cluster.generation.url), workload, ids),
    ),
    proxy: Array.from({ length: concurrency }, () => proxyPath(endpointOf(cluster.proxy.url), workload)),
    floor: Array.from({ length: concurrency }, () => proxyPath(endpointOf(floorOf(cluster).url), workload)),
  };
  try {
    const tally = await alternateRounds(cluster.sampled, users, {
      warmup: { seconds: plan.warmupSeconds },
      rounds: plan.rounds,
      round: { seconds: plan.roundSeconds },
    });
    const direct = figures(tally.direct, cores, undefined);
    const proxy = figures(tally.proxy, cores, "proxy");
    const floor = figures(tally.floor, cores, "floor");
    return {
      concurrency,
      direct,
      proxy,
      floor,
      addedP50Us: proxy.latencyUs.p50 - direct.latencyUs.p50,
      addedP99Us: proxy.latencyUs.p99 - direct.latencyUs.p99,
      floorAddedP50Us: floor.latencyUs.p50 - direct.latencyUs.p50,
      cpuOverFloor: proxy.relayCpuUs / floor.relayCpuUs,
    };
  } finally {
    for (const path of [...users.direct, ...users.proxy, ...users.floor]) path.close();
  }
}

export function floorOf(cluster: Cluster): Service {
  if (cluster.floor === undefined) throw new Error("This scenario needs the floor relay: start its cluster withFloor");
  return cluster.floor;
}

function figures(tally: Tally, cores: number, relay: "proxy" | "floor" | undefined): PathFigures {
  return {
    relayCpuUs: relay === undefined ? Number.NaN : medianCpuPerRequest(tally, relay, 1e6),
    latencyUs: summarize(tally.latenciesUs),
    requestsPerSecond: tally.seconds === 0 ? 0 : tally.ok / tally.seconds,
    ok: tally.ok,
    errors: tally.errors,
    errorSamples: tally.errorSamples,
    cpuUsPerRequest: cpuPerRequest(tally, 1e6),
    foreignLoad: foreignLoad(tally, cores),
  };
}
