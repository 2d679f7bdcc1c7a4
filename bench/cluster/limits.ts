/**
 * Open-file limit for 10,000 streams: the proxy holds two sockets per stream (client and
 * worker), more than a common hard limit of 20,000. Raised on this process with prlimit, so
 * every child inherits it; needs root (or CAP_SYS_RESOURCE) above the hard limit.
 */

import { readFileSync } from "node:fs";

export function openFileLimit(pid: number | "self" = "self"): number {
  const limits = readFileSync(`/proc/${pid}/limits`, "utf8");
  const match = /^Max open files\s+(\d+|unlimited)/m.exec(limits);
  if (!match || match[1] === "unlimited") return Number.POSITIVE_INFINITY;
  return Number(match[1]);
}

/** Tries to raise this process's limit to `wanted`; returns the limit in force afterwards. */
export function raiseOpenFileLimit(wanted: number): number {
  if (openFileLimit() >= wanted) return openFileLimit();
  const result = Bun.spawnSync(["prlimit", "--pid", String(process.pid), `--nofile=${wanted}:${wanted}`], {
    stdout: "ignore",
    stderr: "ignore",
  });
  if (!result.success) return openFileLimit();
  return openFileLimit();
}
