/**
 * (b) Streamed relay: SSE events per second, CPU per 1,000 streamed requests and time to first
 * event, through the proxy, through the floor relay and straight to the workers, in rotating
 * rounds of a fixed number of requests.
 */

import type { Cluster } from "../cluster/cluster.ts";
import type { Service } from "../cluster/service.ts";
import { alternateRounds, cpuPerRequest, foreignLoad, medianCpuPerRequest, type Kind, type Tally } from "../load/ab-rounds.ts";
import { directPath, endpointOf, newIds, proxyPath, type Path, type Workload } from "../load/paths.ts";
import { chatStream } from "../load/workloads.ts";
import { summarize, type Summary } from "../lib/stats.ts";
import { floorOf } from "./latency.ts";

export interface StreamingPlan {
  readonly concurrency: number;
  readonly tokens: number;
  readonly rounds: number;
  readonly requestsPerRound: number;
  /** The first-event rounds: streams paced by the generation worker, so the first event is not the whole stream. */
  readonly firstEvent: {
    readonly tokens: number;
    readonly tokenMs: number;
    readonly requestsPerRound: number;
    readonly clients: readonly number[];
  };
}

/** Time to first event in the paced rounds, per path, at one concurrency. */
export interface FirstEventFigures {
  readonly clients: number;
  readonly direct: Summary;
  readonly floor: Summary;
  readonly floorJs: Summary;
  readonly proxy: Summary;
  readonly errors: number;
}

export interface StreamFigures {
  readonly requests: number;
  readonly errors: number;
  readonly errorSamples: readonly string[];
  readonly eventsPerSecond: number;
  readonly eventsPerRequest: number;
  /** Whole-stream duration per request, µs. */
  readonly durationUs: Summary;
  /** Request written → first complete SSE event, µs. */
  readonly firstEventUs: Summary;
  /** The relay's (proxy's or floor's) CPU s per 1,000 requests, median over rounds; NaN for direct. */
  readonly relayCpuSecondsPer1000: number;
  /** CPU seconds per 1,000 streamed requests, per process. */
  readonly cpuSecondsPer1000: Record<string, number>;
  readonly foreignLoad: number;
}

export interface StreamingResult {
  readonly plan: StreamingPlan;
  readonly direct: StreamFigures;
  readonly proxy: StreamFigures;
  readonly floor: StreamFigures;
  readonly floorJs: StreamFigures;
  /** Proxied events/s over direct events/s. */
  readonly throughputRatio: number;
  readonly floorThroughputRatio: number;
  /** One per plan.firstEvent.clients. */
  readonly firstEvents: readonly FirstEventFigures[];
  /** Proxy CPU per streamed request over the generation worker's, in the proxied rounds. */
  readonly proxyOverGenerationCpu: number;
}

/** Bounds on a round that should end by its request count. */
const ROUND_TIMEOUT_S = 120;

export async function runStreaming(cluster: Cluster, plan: StreamingPlan, cores: number): Promise<StreamingResult> {
  const workload = chatStream(plan.tokens);
  const users = usersOf(cluster, workload, plan.concurrency);
  try {
    const tally = await alternateRounds(cluster.sampled, users, {
      warmup: { seconds: ROUND_TIMEOUT_S, requests: plan.concurrency * 4 },
      rounds: plan.rounds,
      round: { seconds: ROUND_TIMEOUT_S, requests: plan.requestsPerRound },
    });
    const direct = figures(tally.direct, cores, undefined);
    const proxy = figures(tally.proxy, cores, "proxy");
    const floor = figures(tally.floor, cores, "floor");
    const floorJs = figures(tally["floor-js"], cores, "floor-js");
    const firstEvents: FirstEventFigures[] = [];
    for (const clients of plan.firstEvent.clients) firstEvents.push(await firstEventRounds(cluster, plan, clients));
    return {
      plan,
      direct,
      proxy,
      floor,
      floorJs,
      firstEvents,
      throughputRatio: proxy.eventsPerSecond / direct.eventsPerSecond,
      floorThroughputRatio: floor.eventsPerSecond / direct.eventsPerSecond,
      proxyOverGenerationCpu: (proxy.cpuSecondsPer1000["proxy"] ?? 0) / (proxy.cpuSecondsPer1000["generation"] ?? Number.NaN),
    };
  } finally {
    for (const list of Object.values(users)) for (const path of list) path.close();
  }
}

/**
 * Time to first event with the generation worker pacing its tokens (the stream of a real
 * model), so the first event is not held behind the rest of an instant stream and the cores
 * are not saturated: what a client waits for its first token with 15 other streams running.
 */
async function firstEventRounds(cluster: Cluster, plan: StreamingPlan, clients: number): Promise<FirstEventFigures> {
  const users = usersOf(cluster, chatStream(plan.firstEvent.tokens, `gen.token_ms=${plan.firstEvent.tokenMs}`), clients);
  // Fewer requests for fewer clients: a round lasts about as long either way.
  const requests = Math.max(clients * 4, Math.round((plan.firstEvent.requestsPerRound * clients) / plan.concurrency));
  try {
    const tally = await alternateRounds(cluster.sampled, users, {
      warmup: { seconds: ROUND_TIMEOUT_S, requests: clients * 2 },
      rounds: plan.rounds,
      round: { seconds: ROUND_TIMEOUT_S, requests },
    });
    return {
      clients,
      direct: summarize(tally.direct.firstEventUs),
      floor: summarize(tally.floor.firstEventUs),
      floorJs: summarize(tally["floor-js"].firstEventUs),
      proxy: summarize(tally.proxy.firstEventUs),
      errors: Object.values(tally).reduce((sum, t) => sum + t.errors, 0),
    };
  } finally {
    for (const list of Object.values(users)) for (const path of list) path.close();
  }
}

function usersOf(cluster: Cluster, workload: Workload, concurrency: number): Record<Kind, Path[]> {
  const ids = newIds();
  return {
    direct: Array.from({ length: concurrency }, () =>
      directPath(endpointOf(cluster.context.url), endpointOf(cluster.generation.url), workload, ids),
    ),
    proxy: Array.from({ length: concurrency }, () => proxyPath(endpointOf(cluster.proxy.url), workload)),
    floor: Array.from({ length: concurrency }, () => proxyPath(endpointOf(floorOf(cluster).url), workload)),
    "floor-js": Array.from({ length: concurrency }, () => proxyPath(endpointOf(jsFloorOf(cluster).url), workload)),
  };
}

function jsFloorOf(cluster: Cluster): Service {
  if (cluster.floorJs === undefined) throw new Error("This scenario needs the JS-stream floor relay: start its cluster withJsFloor");
  return cluster.floorJs;
}

function figures(tally: Tally, cores: number, relay: "proxy" | "floor" | "floor-js" | undefined): StreamFigures {
  return {
    firstEventUs: summarize(tally.firstEventUs),
    relayCpuSecondsPer1000: relay === undefined ? Number.NaN : medianCpuPerRequest(tally, relay, 1000),
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
