/**
 * Whether a given process listens on a TCP port, read from Linux's /proc: the listening
 * sockets of the port in the process's network namespace (`/proc/<pid>/net/tcp`, `tcp6`), and
 * whether one of them is among the process's open files (`/proc/<pid>/fd`). An upgrade's old
 * process asks this before it stops listening, so that it never lets go of the port to a
 * process that does not serve it (docs/upgrading.md).
 *
 * Only `/proc/<pid>/…` is read, never `/proc/net`: the systemd unit's `ProcSubset=pid` hides
 * the latter. Reading another process's fd links needs the same user, as SO_REUSEPORT does.
 */

import { readdir, readFile, readlink } from "node:fs/promises";

/** `st` of a socket in LISTEN state, in /proc/net/tcp. */
const TCP_LISTEN = "0A";

/**
 * True when process `pid` holds a socket listening on `port`; rejects when /proc cannot tell (no
 * such process, not ours, not Linux). Read without blocking: the tables list every socket of the
 * namespace (6.7 MB for 50,000 connections), and the process asking is serving streams.
 */
export async function listensOn(pid: number, port: number): Promise<boolean> {
  const [tcp, tcp6] = await Promise.all([
    readFile(`/proc/${pid}/net/tcp`, "utf8"),
    readFile(`/proc/${pid}/net/tcp6`, "utf8").catch(() => ""),
  ]);
  // A kernel without IPv6 has no tcp6 table.
  const inodes = new Set([...listeningInodes(tcp, port), ...listeningInodes(tcp6, port)]);
  if (inodes.size === 0) return false;
  for (const fd of await readdir(`/proc/${pid}/fd`)) {
    // An fd closed between the listing and the read has no link.
    const target = await readlink(`/proc/${pid}/fd/${fd}`).catch(() => undefined);
    const inode = target?.startsWith("socket:[") === true ? target.slice("socket:[".length, -1) : undefined;
    if (inode !== undefined && inodes.has(inode)) return true;
  }
  return false;
}

/** The inodes of sockets listening on `port` in a /proc/net/tcp{,6} table. */
export function listeningInodes(table: string, port: number): string[] {
  const localPort = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  const inodes: string[] = [];
  // A listening socket's remote address is port 0 with st LISTEN: only those lines are split
  // (the table also lists every connection, those accepted on this very port included).
  const listening = `:0000 ${TCP_LISTEN} `;
  for (let at = table.indexOf(listening); at >= 0; at = table.indexOf(listening, at + listening.length)) {
    const start = table.lastIndexOf("\n", at) + 1;
    const end = table.indexOf("\n", at);
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode …
    const fields = table
      .slice(start, end < 0 ? undefined : end)
      .trim()
      .split(/\s+/);
    if (fields[1]?.endsWith(localPort) === true && fields[3] === TCP_LISTEN && fields[9] !== undefined) inodes.push(fields[9]);
  }
  return inodes;
}
