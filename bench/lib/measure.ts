/** Runs a piece of load and reports, with its result, the CPU each process and the machine spent on it. */

import { cpuDelta, cpuOf, machineBusySeconds } from "../cluster/proc-stats.ts";

export interface Measured<T> {
  readonly result: T;
  readonly wallSeconds: number;
  /** CPU seconds per named process (the load generator is `loadgen`). */
  readonly cpu: Record<string, number>;
  /**
   * CPU seconds the machine spent on processes outside the benchmark during the run: the
   * noise this run competed with (other tenants, test suites).
   */
  readonly foreignCpu: number;
}

export async function measure<T>(pids: Readonly<Record<string, number>>, run: () => Promise<T>): Promise<Measured<T>> {
  const all = { ...pids, loadgen: process.pid };
  const before = cpuOf(all);
  const busyBefore = machineBusySeconds();
  const started = performance.now();
  const result = await run();
  const wallSeconds = (performance.now() - started) / 1000;
  const cpu = cpuDelta(before, cpuOf(all));
  const ours = Object.values(cpu).reduce((a, b) => a + b, 0);
  const foreignCpu = Math.max(0, machineBusySeconds() - busyBefore - ours);
  return { result, wallSeconds, cpu, foreignCpu };
}

/** Adds per-process CPU seconds of several runs. */
export function addCpu(into: Record<string, number>, more: Readonly<Record<string, number>>): void {
  for (const [name, seconds] of Object.entries(more)) into[name] = (into[name] ?? 0) + seconds;
}
