/** Per-process figures from /proc: CPU time (all threads), resident memory, open sockets. */

import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** USER_HZ: the unit of utime/stime in /proc/<pid>/stat; 100 on every Linux ABI Bun runs on. */
const CLOCK_TICKS_PER_S = 100;

/** User + system CPU seconds used so far by every thread of the process. */
export function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // The command name (field 2) may hold spaces and parentheses: count fields after the last ")".
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const utime = Number(fields[11]);
  const stime = Number(fields[12]);
  return (utime + stime) / CLOCK_TICKS_PER_S;
}

/** Resident set size in bytes (VmRSS). */
export function rssBytes(pid: number): number {
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const match = /^VmRSS:\s+(\d+)\s+kB$/m.exec(status);
  return match ? Number(match[1]) * 1024 : 0;
}

/** Open file descriptors of the process that are sockets. */
export function socketCount(pid: number): number {
  let sockets = 0;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      if (readlinkSync(`/proc/${pid}/fd/${fd}`).startsWith("socket:")) sockets++;
    } catch {
      // The descriptor closed between the listing and the read.
    }
  }
  return sockets;
}

/** CPU seconds of several processes, read together, for before/after deltas. */
export function cpuOf(pids: Readonly<Record<string, number>>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, pid] of Object.entries(pids)) out[name] = pid === process.pid ? ownCpuSeconds() : cpuSeconds(pid);
  return out;
}

function ownCpuSeconds(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1e6;
}

export function cpuDelta(before: Record<string, number>, after: Record<string, number>): Record<string, number> {
  const out: Record<string, number> = {};
  for (const [name, value] of Object.entries(after)) out[name] = value - (before[name] ?? 0);
  return out;
}

/** CPU seconds the whole machine spent busy (all cores), from /proc/stat. */
export function machineBusySeconds(): number {
  const line = readFileSync("/proc/stat", "utf8").split("\n", 1)[0] ?? "";
  const ticks = line.trim().split(/\s+/).slice(1).map(Number);
  // user nice system idle iowait irq softirq steal …: everything but idle and iowait is busy.
  const busy = ticks.reduce((sum, value, i) => (i === 3 || i === 4 ? sum : sum + value), 0);
  return busy / CLOCK_TICKS_PER_S;
}

export interface SocketBreakdown {
  /** Connections accepted on the process's own listening port: its clients. */
  readonly clients: number;
  /** Every other connected TCP socket: its keep-alive pools to the workers. */
  readonly upstream: number;
  readonly listening: number;
  /** Sockets that are not TCP (Unix sockets, eventfd-like runtime handles). */
  readonly other: number;
}

const TCP_LISTEN = "0A";

/** The process's sockets by role, matched through their inodes in /proc/net/tcp{,6}. */
export function socketBreakdown(pid: number, listenPort: number): SocketBreakdown {
  const inodes = new Set<string>();
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    try {
      const match = /^socket:\[(\d+)\]$/.exec(readlinkSync(`/proc/${pid}/fd/${fd}`));
      if (match?.[1] !== undefined) inodes.add(match[1]);
    } catch {
      // The descriptor closed between the listing and the read.
    }
  }
  const counts = { clients: 0, upstream: 0, listening: 0, other: 0 };
  let tcp = 0;
  for (const table of [`/proc/${pid}/net/tcp`, `/proc/${pid}/net/tcp6`]) {
    for (const line of readFileSync(table, "utf8").split("\n").slice(1)) {
      const fields = line.trim().split(/\s+/);
      const inode = fields[9];
      if (inode === undefined || !inodes.has(inode)) continue;
      tcp++;
      const localPort = Number.parseInt((fields[1] ?? "").split(":")[1] ?? "", 16);
      if (fields[3] === TCP_LISTEN) counts.listening++;
      else if (localPort === listenPort) counts.clients++;
      else counts.upstream++;
    }
  }
  counts.other = inodes.size - tcp;
  return counts;
}
