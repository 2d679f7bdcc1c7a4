/**
 * Side by side in one run: the paths (direct, proxy, floor) take turns in short rounds on the
 * same workers, the order rotating each round, so slow drifts and other tenants' bursts on a
 * noisy machine fall on all of them, and their ratios hold.
 */

import { addCpu, measure } from "../lib/measure.ts";
import { median } from "../lib/stats.ts";
import { closedLoop, type LoopLimit } from "./closed-loop.ts";
import type { Path } from "./paths.ts";

/** direct: the load generator calls both workers; proxy: through the proxy; floor: through the floor relay (floor-js: its JS-stream variant). */
export type Kind = "direct" | "proxy" | "floor" | "floor-js";

/** One round of one path. */
export interface RoundFigures {
  readonly ok: number;
  readonly seconds: number;
  readonly cpu: Readonly<Record<string, number>>;
}

/** Everything one path's rounds added up to. */
export interface Tally {
  readonly latenciesUs: number[];
  readonly firstEventUs: number[];
  ok: number;
  errors: number;
  frames: number;
  seconds: number;
  /** CPU seconds of processes outside the benchmark during these rounds. */
  foreignCpu: number;
  readonly errorSamples: string[];
  /** CPU seconds per process (proxy, floor, context, generation, loadgen). */
  readonly cpu: Record<string, number>;
  readonly rounds: RoundFigures[];
}

export interface AbPlan {
  readonly warmup: LoopLimit;
  readonly rounds: number;
  readonly round: LoopLimit;
}

/** `pids`: the processes whose CPU each round is charged (by name). */
export async function alternateRounds<K extends string>(
  pids: Readonly<Record<string, number>>,
  users: Record<K, Path[]>,
  plan: AbPlan,
): Promise<Record<K, Tally>> {
  const kinds = Object.keys(users) as K[];
  const tally = Object.fromEntries(kinds.map((kind) => [kind, emptyTally()])) as Record<K, Tally>;
  for (const kind of kinds) await closedLoop(users[kind], plan.warmup);
  for (let round = 0; round < plan.rounds; round++) {
    const order = kinds.map((_, i) => kinds[(i + round) % kinds.length] as K);
    for (const kind of order) {
      const run = await measure(pids, () => closedLoop(users[kind], plan.round));
      const into = tally[kind];
      for (const sample of run.result.latenciesUs) into.latenciesUs.push(sample);
      for (const sample of run.result.firstEventUs) into.firstEventUs.push(sample);
      into.ok += run.result.ok;
      into.errors += run.result.errors;
      into.frames += run.result.frames;
      into.seconds += run.result.seconds;
      into.foreignCpu += run.foreignCpu;
      for (const message of run.result.errorSamples) if (into.errorSamples.length < 5) into.errorSamples.push(message);
      addCpu(into.cpu, run.cpu);
      into.rounds.push({ ok: run.result.ok, seconds: run.result.seconds, cpu: run.cpu });
    }
  }
  return tally;
}

/** CPU per successful request, per process, over all rounds, in the given unit (1e6: µs; 1000: s per 1,000). */
export function cpuPerRequest(tally: Tally, unit: number): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, seconds] of Object.entries(tally.cpu)) out[name] = tally.ok === 0 ? 0 : (seconds / tally.ok) * unit;
  return out;
}

/** The median over rounds of one process's CPU per successful request (a burst of other load moves one round, not the figure). */
export function medianCpuPerRequest(tally: Tally, process: string, unit: number): number {
  return median(tally.rounds.filter((r) => r.ok > 0).map((r) => ((r.cpu[process] ?? 0) / r.ok) * unit));
}

/** Share of the machine's cores used by processes outside the benchmark. */
export function foreignLoad(tally: Tally, cores: number): number {
  return tally.seconds === 0 ? 0 : tally.foreignCpu / (tally.seconds * cores);
}

function emptyTally(): Tally {
  return {
    latenciesUs: [],
    firstEventUs: [],
    ok: 0,
    errors: 0,
    frames: 0,
    seconds: 0,
    foreignCpu: 0,
    errorSamples: [],
    cpu: {},
    rounds: [],
  };
}
