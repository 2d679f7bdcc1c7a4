/**
 * Which process listens on a Unix socket path, read from /proc, for the one case where the
 * socket itself cannot say: its holder closed the connection before answering who it is (full,
 * or not a disagg-proxy). Only this user's processes can be seen, as with every /proc fd read.
 */

import { readdir, readFile, readlink } from "node:fs/promises";

/** `__SO_ACCEPTCON` in /proc/net/unix's Flags column: a listening socket. */
const LISTENING_FLAGS = "00010000";

export interface SocketHolder {
  readonly pid: number;
  /** Its command line, arguments joined by spaces (at most 200 characters). */
  readonly command: string;
}

/** The inode of the socket listening on `path`, from a /proc/net/unix table. */
export function listeningInode(table: string, path: string): string | undefined {
  for (const line of table.split("\n")) {
    // Num RefCount Protocol Flags Type St Inode Path
    const fields = line.trim().split(/\s+/);
    if (fields.length >= 8 && fields[3] === LISTENING_FLAGS && fields.slice(7).join(" ") === path) return fields[6];
  }
  return undefined;
}

/** The process holding the socket that listens on `path`, or undefined when none of this user's is found. */
export async function socketHolder(path: string): Promise<SocketHolder | undefined> {
  const inode = listeningInode(await readFile("/proc/self/net/unix", "utf8"), path);
  if (inode === undefined) return undefined;
  const target = `socket:[${inode}]`;
  const pids = (await readdir("/proc")).filter((name) => /^\d+$/.test(name));
  for (const pid of pids) {
    // oxlint-disable-next-line no-await-in-loop -- one process at a time: only on a take-over's failure
    const fds = await readdir(`/proc/${pid}/fd`).catch((): string[] => []);
    for (const fd of fds) {
      // oxlint-disable-next-line no-await-in-loop -- as above
      if ((await readlink(`/proc/${pid}/fd/${fd}`).catch(() => "")) !== target) continue;
      // oxlint-disable-next-line no-await-in-loop -- found: read once
      const command = await readFile(`/proc/${pid}/cmdline`, "utf8").catch(() => "");
      return { pid: Number(pid), command: command.split("\0").filter(Boolean).join(" ").slice(0, 200) };
    }
  }
  return undefined;
}
