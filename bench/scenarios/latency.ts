/**
 * (a) Added latency of a non-streamed chat request: through the proxy vs the two worker calls
 * made in sequence by the load generator, at several concurrencies (closed loop: each user
 * sends its next request when its previous answer is complete).
 */

import type { Cluster } from "../cluster/cluster.ts";
import { alternateRounds, cpuPerRequest, foreignLoad, type Kind, type Tally } from "../load/ab-rounds.ts";
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
  /** CPU µs per successful request, per process. */
  readonly cpuUsPerRequest: Record<string, number>;
  /** Share of the machine's cores used by processes outside the benchmark meanwhile. */
  readonly foreignLoad: number;
}

export interface LatencyPoint {
  readonly concurrency: number;
  readonly direct: PathFigures;
  readonly proxy: PathFigures;
  /** Proxy percentile minus direct percentile. */
  readonly addedP50Us: number;
  readonly addedP99Us: number;
}

export async function runLatency(cluster: Cluster, plan: LatencyPlan, cores: number): Promise<LatencyPoint[]> {
  const points: LatencyPoint[] = [];
  for (const concurrency of plan.concurrencies) points.push(await measurePoint(cluster, plan, concurrency, cores));
  return points;
}

async function measurePoint(cluster: Cluster, plan: LatencyPlan, concurrency: number, cores: number): Promise<LatencyPoint> {
  const workload = chatJson(plan.tokens);
  const ids = newIds();
  const users: Record<Kind, Path[]> = {
    direct: Array.from({ length: concurrency }, () =>
      directPath(endpointOf(cluster.context.url), endpointOf(cluster.generation.url), workload, ids),
    ),
    proxy: Array.from({ length: concurrency }, () => proxyPath(endpointOf(cluster.proxy.url), workload)),
  };
  try {
    const tally = await alternateRounds(cluster, users, {
      warmup: { seconds: plan.warmupSeconds },
      rounds: plan.rounds,
      round: { seconds: plan.roundSeconds },
    });
    const direct = figures(tally.direct, cores);
    const proxy = figures(tally.proxy, cores);
    return {
      concurrency,
      direct,
      proxy,
      addedP50Us: proxy.latencyUs.p50 - direct.latencyUs.p50,
      addedP99Us: proxy.latencyUs.p99 - direct.latencyUs.p99,
    };
  } finally {
    for (const path of [...users.direct, ...users.proxy]) path.close();
  }
}

function figures(tally: Tally, cores: number): PathFigures {
  return {
    latencyUs: summarize(tally.latenciesUs),
    requestsPerSecond: tally.seconds === 0 ? 0 : tally.ok / tally.seconds,
    ok: tally.ok,
    errors: tally.errors,
    errorSamples: tally.errorSamples,
    cpuUsPerRequest: cpuPerRequest(tally, 1e6),
    foreignLoad: foreignLoad(tally, cores),
  };
}
