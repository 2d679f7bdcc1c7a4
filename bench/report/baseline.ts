/**
 * A run's verdicts on issue #18's floor targets kept as the "before" of later runs:
 * `bun bench/report/baseline.ts bench/out/results.json > bench/baselines/issue-18-before.json`.
 * RESULTS.md shows the kept figure beside each target's figure of the run it reports.
 */

import type { BenchResults } from "./results.ts";
import { judgeFloorTargets } from "./targets.ts";

export interface Baseline {
  readonly proxyVersion: string;
  readonly date: string;
  readonly command: string;
  readonly loadAverageAtStart: number;
  readonly verdicts: readonly { readonly target: string; readonly figure: string; readonly pass: boolean | undefined }[];
}

export function baselineOf(results: BenchResults): Baseline {
  return {
    proxyVersion: results.machine.proxyVersion,
    date: results.machine.date,
    command: results.command,
    loadAverageAtStart: results.machine.loadAverageAtStart,
    verdicts: judgeFloorTargets(results).map(({ target, figure, pass }) => ({ target, figure, pass })),
  };
}

if (import.meta.main) {
  const file = Bun.argv[2];
  if (file === undefined) throw new Error("usage: bun bench/report/baseline.ts bench/out/results.json");
  const results = (await Bun.file(file).json()) as BenchResults;
  process.stdout.write(`${JSON.stringify(baselineOf(results), null, 2)}\n`);
}
