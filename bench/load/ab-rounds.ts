/**
 * Side by side in one run: the direct and the proxied path take turns in short rounds on the
 * same workers (alternating which goes first), so slow drifts and other tenants' bursts on a
 * noisy machine fall on both, and their ratio holds.
 */

import type { Cluster } from "../cluster/cluster.ts";
import { addCpu, measure } from "../lib/measure.ts";
import { closedLoop, type LoopLimit } from "./closed-loop.ts";
import type { Path } from "./paths.ts";

export type Kind = "direct" | "proxy";

/** Everything both paths' rounds added up to. */
export interface Tally {
  readonly latenciesUs: number[];
  ok: number;
  errors: number;
  frames: number;
  seconds: number;
  /** CPU seconds of processes outside the benchmark during these rounds. */
  foreignCpu: number;
  readonly errorSamples: string[];
  /** CPU seconds per process (proxy, context, generation, loadgen). */
  readonly cpu: Record<string, number>;
}

export interface AbPlan {
  readonly warmup: LoopLimit;
  readonly rounds: number;
  readonly round: LoopLimit;
}

export async function alternateRounds(cluster: Cluster, users: Record<Kind, Path[]>, plan: AbPlan): Promise<Record<Kind, Tally>> {
  const tally: Record<Kind, Tally> = { direct: emptyTally(), proxy: emptyTally() };
  for (const kind of ["direct", "proxy"] as const) await closedLoop(users[kind], plan.warmup);
  for (let round = 0; round < plan.rounds; round++) {
    const order: Kind[] = round % 2 === 0 ? ["direct", "proxy"] : ["proxy", "direct"];
    for (const kind of order) {
      const run = await measure(cluster.pids, () => closedLoop(users[kind], plan.round));
      const into = tally[kind];
      for (const sample of run.result.latenciesUs) into.latenciesUs.push(sample);
      into.ok += run.result.ok;
      into.errors += run.result.errors;
      into.frames += run.result.frames;
      into.seconds += run.result.seconds;
      into.foreignCpu += run.foreignCpu;
      for (const message of run.result.errorSamples) if (into.errorSamples.length < 5) into.errorSamples.push(message);
      addCpu(into.cpu, run.cpu);
    }
  }
  return tally;
}

/** CPU per successful request, per process, in the given unit (1e6: µs; 1000: s per 1,000). */
export function cpuPerRequest(tally: Tally, unit: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, seconds] of Object.entries(tally.cpu)) out[name] = tally.ok === 0 ? 0 : (seconds / tally.ok) * unit;
  return out;
}

/** Share of the machine's cores used by processes outside the benchmark. */
export function foreignLoad(tally: Tally, cores: number): number {
  return tally.seconds === 0 ? 0 : tally.foreignCpu / (tally.seconds * cores);
}

function emptyTally(): Tally {
  return { latenciesUs: [], ok: 0, errors: 0, frames: 0, seconds: 0, foreignCpu: 0, errorSamples: [], cpu: {} };
}
