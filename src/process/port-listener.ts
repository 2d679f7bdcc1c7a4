/**
 * Which sockets a given process listens with on a TCP port, read from Linux's /proc: the
 * listening sockets of the port in the process's network namespace (`/proc/<pid>/net/tcp`,
 * `tcp6`) that are among its open files (`/proc/<pid>/fd`), with their local address and owner.
 * An upgrade's old process asks this before it stops listening, so that it never lets go of the
 * port to a process that does not serve the same socket (docs/upgrading.md).
 *
 * Only `/proc/<pid>/…` is read, never `/proc/net`: the systemd unit's `ProcSubset=pid` hides
 * the latter. Reading another process's fd links needs the same user, as SO_REUSEPORT does.
 */

import { readdir, readFile, readlink } from "node:fs/promises";

/** fd links read at once. */
const FD_BATCH = 256;

/** `st` of a socket in LISTEN state, in /proc/net/tcp. */
const TCP_LISTEN = "0A";

/** A TCP socket in LISTEN state, as a /proc/<pid>/net/tcp{,6} table lists it. */
export interface ListeningSocket {
  /** Its local address as written to listen on: `127.0.0.1`, `0.0.0.0`, `::`, `::1` (IPv4-mapped as IPv4). */
  readonly address: string;
  /** The uid that opened it. */
  readonly uid: number;
  readonly inode: string;
}

/**
 * The sockets process `pid` holds listening on `port`; rejects when /proc cannot tell (no such
 * process, not ours, not Linux). Read without blocking: the tables list every socket of the
 * namespace (6.7 MB for 50,000 connections), and the process asking is serving streams.
 */
export async function socketsListening(pid: number, port: number): Promise<ListeningSocket[]> {
  const [tcp, tcp6] = await Promise.all([
    readFile(`/proc/${pid}/net/tcp`, "utf8"),
    // A kernel without IPv6 has no tcp6 table.
    readFile(`/proc/${pid}/net/tcp6`, "utf8").catch(() => ""),
  ]);
  const sockets = [...listeningSockets(tcp, port), ...listeningSockets(tcp6, port)];
  if (sockets.length === 0) return [];
  const held = new Set<string>();
  const fds = await readdir(`/proc/${pid}/fd`);
  // In batches: 2.5x faster than one at a time (9,000 fds: 75 ms, not 190), and the old process is serving.
  for (let at = 0; at < fds.length; at += FD_BATCH) {
    // An fd closed between the listing and the read has no link.
    // oxlint-disable-next-line no-await-in-loop -- one batch at a time: a process may hold tens of thousands of fds
    const targets = await Promise.all(fds.slice(at, at + FD_BATCH).map((fd) => readlink(`/proc/${pid}/fd/${fd}`).catch(() => undefined)));
    for (const target of targets) if (target?.startsWith("socket:[") === true) held.add(target.slice("socket:[".length, -1));
  }
  return sockets.filter((socket) => held.has(socket.inode));
}

/** True when process `pid` holds a socket listening on `port`; rejects when /proc cannot tell. */
export async function listensOn(pid: number, port: number): Promise<boolean> {
  return (await socketsListening(pid, port)).length > 0;
}

/** The sockets listening on `port` in a /proc/net/tcp{,6} table. */
export function listeningSockets(table: string, port: number): ListeningSocket[] {
  const localPort = `:${port.toString(16).toUpperCase().padStart(4, "0")}`;
  const sockets: ListeningSocket[] = [];
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
    const [, local, , state, , , , uid, , inode] = fields;
    if (local?.endsWith(localPort) !== true || state !== TCP_LISTEN || uid === undefined || inode === undefined) continue;
    const address = addressOf(local.slice(0, -localPort.length));
    if (address !== undefined) sockets.push({ address, uid: Number(uid), inode });
  }
  return sockets;
}

/**
 * A table's hex address: IPv4 as one 32-bit word, IPv6 as four, each in the kernel's byte order
 * (little-endian on every machine Bun runs on).
 */
function addressOf(hex: string): string | undefined {
  if (!/^(?:[0-9A-F]{8}|[0-9A-F]{32})$/i.test(hex)) return undefined;
  const bytes: number[] = [];
  for (let word = 0; word < hex.length; word += 8) {
    for (let byte = 3; byte >= 0; byte--) bytes.push(Number.parseInt(hex.slice(word + byte * 2, word + byte * 2 + 2), 16));
  }
  if (bytes.length === 4) return bytes.join(".");
  const mapped = bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff;
  if (mapped) return bytes.slice(12).join(".");
  const groups = Array.from({ length: 8 }, (_, i) => (((bytes[i * 2] ?? 0) << 8) | (bytes[i * 2 + 1] ?? 0)).toString(16));
  // The URL parser writes an IPv6 address in its one canonical form (RFC 5952: `::1`, `::`).
  return new URL(`http://[${groups.join(":")}]/`).hostname.slice(1, -1);
}
