/**
 * The long upgrade run (bench/RESULTS.md, "Upgrades under load"):
 *   bun bench/upgrade/main.ts [--upgrades 20] [--stream-seconds 60] [--gap-ms 4000] [--rate 8] [--burst N] [--binary dist/disagg-proxy]
 * --burst adds N loops that open new connections as fast as they are answered (GET /livez):
 * connections queued on the old listener as it closes, reset unless net.ipv4.tcp_migrate_req=1.
 * Prints the report as JSON and exits 1 when a request was refused, reset or failed, a long
 * stream was not intact, or a new process did not answer within a second of the old one
 * stopping listening. Run it inside a network namespace with net.ipv4.tcp_migrate_req=1 as
 * install.sh sets it on hosts (README "Upgrading"):
 *   unshare -n sh -c 'ip link set lo up && sysctl -qw net.ipv4.tcp_migrate_req=1 && bun bench/upgrade/main.ts'
 */

import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { problems, runUpgrades } from "./upgrade-run.ts";

const { values } = parseArgs({
  options: {
    upgrades: { type: "string", default: "20" },
    "stream-seconds": { type: "string", default: "60" },
    "gap-ms": { type: "string", default: "4000" },
    rate: { type: "string", default: "8" },
    burst: { type: "string", default: "0" },
    binary: { type: "string" },
  },
});

const ROOT = join(import.meta.dir, "..", "..");
const workDir = mkdtempSync(join(tmpdir(), "upgrade-run-"));
const report = await runUpgrades({
  upgrades: Number(values.upgrades),
  streamSeconds: Number(values["stream-seconds"]),
  gapMs: Number(values["gap-ms"]),
  ratePerLoop: Number(values.rate),
  burst: Number(values.burst),
  command: values.binary === undefined ? [process.execPath, join(ROOT, "src", "main.ts")] : [values.binary],
  workDir,
  progress: (line) => process.stderr.write(`${line}\n`),
});
process.stdout.write(`${JSON.stringify({ ...report, workDir, tcpMigrateReq: await migrateReq() }, null, 2)}\n`);
process.exit(problems(report).length === 0 ? 0 : 1);

async function migrateReq(): Promise<string> {
  return (
    await Bun.file("/proc/sys/net/ipv4/tcp_migrate_req")
      .text()
      .catch(() => "unknown")
  ).trim();
}
