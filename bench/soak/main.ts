/**
 * `npm run soak [-- --minutes 8 --clients 48 --schedule generation_first]`: the chaos soak (chaos-soak.ts) from source,
 * printing its report as JSON; exits 1 when a check fails.
 */

import { join } from "node:path";
import { parseArgs } from "node:util";
import { raiseOpenFileLimit } from "../cluster/limits.ts";
import { runChaosSoak } from "./chaos-soak.ts";

const ROOT = join(import.meta.dir, "..", "..");

async function main(): Promise<void> {
  const { values } = parseArgs({
    args: Bun.argv.slice(2),
    options: {
      minutes: { type: "string", default: "8" },
      clients: { type: "string", default: "48" },
      "fault-every": { type: "string", default: "8" },
      seed: { type: "string", default: "17" },
      schedule: { type: "string" },
    },
  });
  raiseOpenFileLimit(65_536);
  const report = await runChaosSoak({
    seconds: Number(values.minutes) * 60,
    clients: Number(values.clients),
    faultEverySeconds: Number(values["fault-every"]),
    idleTimeoutS: 5,
    warmupShare: 0.2,
    seed: Number(values.seed),
    logDir: join(ROOT, "bench", "out", "logs"),
    command: [process.execPath, join(ROOT, "src", "main.ts")],
    schedule:
      values.schedule === "generation_first"
        ? "generation_first"
        : values.schedule === undefined || values.schedule === "context_first"
          ? undefined
          : fail(`--schedule ${values.schedule}: context_first or generation_first`),
  });
  process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
  process.exitCode = report.pass ? 0 : 1;
}

function fail(message: string): never {
  throw new Error(message);
}

await main();
