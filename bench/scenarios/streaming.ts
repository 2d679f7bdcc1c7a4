/**
 * (b) Streamed relay: SSE events per second and CPU per 1,000 streamed requests, through the
 * proxy vs straight to the workers, in alternating rounds of a fixed number of requests.
 */

import type { Cluster } from "../cluster/cluster.ts";
import { alternateRounds, cpuPerRequest, foreignLoad, type Kind, type Tally } from "../load/ab-rounds.ts";
import { directPath, endpointOf, newIds, proxyPath, type Path } from "../load/paths.ts";
import { chatStream } from "../load/workloads.ts";
import { summarize, type Summary } from "../lib/stats.ts";

export interface StreamingPlan {
  readonly concurrency: number;
  readonly tokens: number;
  readonly rounds: number;
  readonly requestsPerRound: number;
}

export interface StreamFigures {
  readonly requests: number;
  readonly errors: number;
  readonly errorSamples: readonly string[];
  readonly eventsPerSecond: number;
  readonly eventsPerRequest: number;
  /** Whole-stream duration per request, µs. */
  readonly durationUs: Summary;
  /** CPU seconds per 1,000 streamed requests, per process. */
  readonly cpuSecondsPer1000: Record<string, number>;
  readonly foreignLoad: number;
}

export interface StreamingResult {
  readonly plan: StreamingPlan;
  readonly direct: StreamFigures;
  readonly proxy: StreamFigures;
  /** Proxied events/s over direct events/s. */
  readonly throughputRatio: number;
  /** Proxy CPU per streamed request over the generation worker's, in the proxied rounds. */
  readonly proxyOverGenerationCpu: number;
}

/** Bounds on a round that should end by its request count. */
const ROUND_TIMEOUT_S = 120;

export async function runStreaming(cluster: Cluster, plan: StreamingPlan, cores: number): Promise<StreamingResult> {
  const workload = chatStream(plan.tokens);
  const ids = newIds();
  const users: Record<Kind, Path[]> = {
    direct: Array.from({ length: plan.concurrency }, () =>
      directPath(endpointOf(cluster.context.url), endpointOf(cluster.generation.url), workload, ids),
    ),
    proxy: Array.from({ length: plan.concurrency }, () => proxyPath(endpointOf(cluster.proxy.url), workload)),
  };
  try {
    const tally = await alternateRounds(cluster, users, {
      warmup: { seconds: ROUND_TIMEOUT_S, requests: plan.concurrency * 4 },
      rounds: plan.rounds,
      round: { seconds: ROUND_TIMEOUT_S, requests: plan.requestsPerRound },
    });
    const direct = figures(tally.direct, cores);
    const proxy = figures(tally.proxy, cores);
    return {
      plan,
      direct,
      proxy,
      throughputRatio: proxy.eventsPerSecond / direct.eventsPerSecond,
      proxyOverGenerationCpu: (proxy.cpuSecondsPer1000["proxy"] ?? 0) / (proxy.cpuSecondsPer1000["generation"] ?? Number.NaN),
    };
  } finally {
    for (const path of [...users.direct, ...users.proxy]) path.close();
  }
}

function figures(tally: Tally, cores: number): StreamFigures {
  return {
    requests: tally.ok,
    errors: tally.errors,
    errorSamples: tally.errorSamples,
    eventsPerSecond: tally.seconds === 0 ? 0 : tally.frames / tally.seconds,
    eventsPerRequest: tally.ok === 0 ? 0 : tally.frames / tally.ok,
    durationUs: summarize(tally.latenciesUs),
    cpuSecondsPer1000: cpuPerRequest(tally, 1000),
    foreignLoad: foreignLoad(tally, cores),
  };
}
