/**
 * Whether a given process listens on a TCP port, read from Linux's /proc: the listening
 * sockets of the port in the process's network namespace (`/proc/<pid>/net/tcp`, `tcp6`), and
 * whether one of them is among the process's open files (`/proc/<pid>/fd`). An upgrade's old
 * process asks this before it stops listening, so that it never lets go of the port to a
 * process that does not serve it (README "Upgrading").
 *
 * Only `/proc/<pid>/…` is read, never `/proc/net`: the systemd unit's `ProcSubset=pid` hides
 * the latter. Reading another process's fd links needs the same user, as SO_REUSEPORT does.
 */

import { readdirSync, readFileSync, readlinkSync } from "node:fs";

/** `st` of a socket in LISTEN state, in /proc/net/tcp. */
const TCP_LISTEN = "0A";

/** True when process `pid` holds a socket listening on `port`; throws when /proc cannot tell (no such process, not ours, not Linux). */
export function listensOn(pid: number, port: number): boolean {
  const inodes = new Set([...listeningInodes(readFileSync(`/proc/${pid}/net/tcp`, "utf8"), port), ...listeningInodes(readTcp6(pid), port)]);
  if (inodes.size === 0) return false;
  for (const fd of readdirSync(`/proc/${pid}/fd`)) {
    const target = readLinkOrUndefined(`/proc/${pid}/fd/${fd}`);
    const inode = target?.startsWith("socket:[") === true ? target.slice("socket:[".length, -1) : undefined;
    if (inode !== undefined && inodes.has(inode)) return true;
  }
  return false;
}

/** The inodes of sockets listening on `port` in a /proc/net/tcp{,6} table. */
export function listeningInodes(table: string, port: number): string[] {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  return table
    .split("\n")
    .slice(1)
    .flatMap((line) => {
      // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
      const fields = line.trim().split(/\s+/);
      const local = fields[1];
      const inode = fields[9];
      if (local === undefined || inode === undefined || fields[3] !== TCP_LISTEN) return [];
      return local.slice(local.lastIndexOf(":") + 1) === hexPort ? [inode] : [];
    });
}

/** A kernel without IPv6 has no tcp6 table. */
function readTcp6(pid: number): string {
  try {
    return readFileSync(`/proc/${pid}/net/tcp6`, "utf8");
  } catch {
    return "";
  }
}

/** An fd closed between the listing and the read has no link. */
function readLinkOrUndefined(path: string): string | undefined {
  try {
    return readlinkSync(path);
  } catch {
    return undefined;
  }
}
