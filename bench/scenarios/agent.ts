/**
 * (h) Agent-sized prompts: non-streamed chat whose system message is KB kilobytes of prose
 * before a short user line (max_tokens 64), at 16 closed-loop clients, through the proxy and
 * through the floor relay in the same rotating rounds, for a sweep of sizes. The workers
 * tokenize at 4 bytes a token (--bytes-per-token 4), so the context answer carries
 * floor(prompt bytes / 4) prompt_token_ids, which both relays send on to the generation worker.
 */

import type { Cluster } from "../cluster/cluster.ts";
import { alternateRounds, foreignLoad, medianCpuPerRequest } from "../load/ab-rounds.ts";
import { endpointOf, proxyPath, type Path } from "../load/paths.ts";
import { agentChat } from "../load/workloads.ts";
import { summarize } from "../lib/stats.ts";
import { floorOf } from "./latency.ts";

export interface AgentPlan {
  /** System prompt sizes in KB (1,024 bytes). */
  readonly sizesKb: readonly number[];
  readonly clients: number;
  readonly rounds: number;
  readonly roundSeconds: number;
  readonly warmupSeconds: number;
  readonly tokens: number;
}

/** Worker flags the scenario's cluster runs with: a real tokenizer's density. */
export const AGENT_WORKER_FLAGS = ["--bytes-per-token", "4"] as const;

export interface AgentPoint {
  readonly sizeKb: number;
  /** The client body's size in bytes. */
  readonly bodyBytes: number;
  readonly proxyCpuUs: number;
  readonly floorCpuUs: number;
  /** Proxy CPU per request over the floor's (medians over rounds). */
  readonly cpuOverFloor: number;
  readonly proxyP50Us: number;
  readonly floorP50Us: number;
  readonly proxyRequestsPerSecond: number;
  readonly floorRequestsPerSecond: number;
  readonly errors: number;
  readonly errorSamples: readonly string[];
  /** Share of the machine's cores used by processes outside the benchmark meanwhile. */
  readonly foreignLoad: number;
}

export async function runAgent(cluster: Cluster, plan: AgentPlan, cores: number): Promise<AgentPoint[]> {
  const points: AgentPoint[] = [];
  for (const sizeKb of plan.sizesKb) points.push(await measureSize(cluster, plan, sizeKb, cores));
  return points;
}

async function measureSize(cluster: Cluster, plan: AgentPlan, sizeKb: number, cores: number): Promise<AgentPoint> {
  const workload = agentChat(sizeKb, plan.tokens);
  const users: Record<"proxy" | "floor", Path[]> = {
    proxy: Array.from({ length: plan.clients }, () => proxyPath(endpointOf(cluster.proxy.url), workload)),
    floor: Array.from({ length: plan.clients }, () => proxyPath(endpointOf(floorOf(cluster).url), workload)),
  };
  try {
    const tally = await alternateRounds(cluster.sampled, users, {
      warmup: { seconds: plan.warmupSeconds },
      rounds: plan.rounds,
      round: { seconds: plan.roundSeconds },
    });
    const proxyCpuUs = medianCpuPerRequest(tally.proxy, "proxy", 1e6);
    const floorCpuUs = medianCpuPerRequest(tally.floor, "floor", 1e6);
    return {
      sizeKb,
      bodyBytes: Buffer.byteLength(JSON.stringify(workload.body)),
      proxyCpuUs,
      floorCpuUs,
      cpuOverFloor: proxyCpuUs / floorCpuUs,
      proxyP50Us: summarize(tally.proxy.latenciesUs).p50,
      floorP50Us: summarize(tally.floor.latenciesUs).p50,
      proxyRequestsPerSecond: tally.proxy.seconds === 0 ? 0 : tally.proxy.ok / tally.proxy.seconds,
      floorRequestsPerSecond: tally.floor.seconds === 0 ? 0 : tally.floor.ok / tally.floor.seconds,
      errors: tally.proxy.errors + tally.floor.errors,
      errorSamples: [...tally.proxy.errorSamples, ...tally.floor.errorSamples].slice(0, 5),
      foreignLoad: (foreignLoad(tally.proxy, cores) + foreignLoad(tally.floor, cores)) / 2,
    };
  } finally {
    for (const path of [...users.proxy, ...users.floor]) path.close();
  }
}
