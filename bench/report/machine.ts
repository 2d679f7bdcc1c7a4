/** What the figures were measured on. */

import { readFileSync } from "node:fs";
import { availableParallelism, loadavg, release, totalmem } from "node:os";

export interface Machine {
  readonly cores: number;
  readonly cpuModel: string;
  readonly memoryGiB: number;
  readonly kernel: string;
  readonly bun: string;
  /** The proxy binary's own version line. */
  readonly proxyVersion: string;
  readonly openFileLimit: number;
  /** 1-minute load average when the run started: how busy the machine already was. */
  readonly loadAverageAtStart: number;
  readonly date: string;
}

export function describeMachine(binary: string, openFileLimit: number): Machine {
  const cpuinfo = readFileSync("/proc/cpuinfo", "utf8");
  const version = Bun.spawnSync([binary, "--version"], { stdout: "pipe", stderr: "ignore" });
  return {
    cores: availableParallelism(),
    cpuModel: /^model name\s*:\s*(.+)$/m.exec(cpuinfo)?.[1]?.trim() ?? "unknown",
    memoryGiB: Math.round(totalmem() / 2 ** 30),
    kernel: release(),
    bun: Bun.version,
    proxyVersion: version.stdout.toString().trim(),
    openFileLimit,
    loadAverageAtStart: loadavg()[0] ?? 0,
    date: new Date().toISOString(),
  };
}
