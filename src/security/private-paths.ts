/**
 * Whether a directory or file on this host is this user's alone: the runtime directory that
 * holds the port's control socket (process/runtime-dir.ts) and the request trace directory
 * (observability/request-trace.ts). A directory another user owns or may write can hold a
 * socket that lies, or a link that sends prompts elsewhere.
 */

import type { Stats } from "node:fs";

/** Who besides the owner must not be able to write a directory. */
export type Writers = "group or others" | "others";

/** `1777`, `700`: the permission bits as `ls -l` and chmod write them. */
export function modeText(mode: number): string {
  return (mode & 0o7777).toString(8).padStart(3, "0");
}

/**
 * Why `stat` (from lstat: a link is not followed) shows a directory this process cannot trust,
 * or undefined: one line naming the path, its mode and owner.
 */
export function directoryDistrust(label: string, path: string, stat: Stats, uid: number | undefined, writers: Writers): string | undefined {
  const facts = `${label} ${path} (mode ${modeText(stat.mode)}, owner uid ${stat.uid})`;
  if (stat.isSymbolicLink()) return `${facts} is a link, not a directory`;
  if (!stat.isDirectory()) return `${facts} is not a directory`;
  if (uid !== undefined && stat.uid !== uid) return `${facts} belongs to another user than this process (uid ${uid})`;
  const mask = writers === "others" ? 0o002 : 0o022;
  if ((stat.mode & mask) !== 0) return `${facts} may be written by ${writers === "others" ? "other users" : "its group or other users"}`;
  return undefined;
}

/** Why a file (a socket, a trace file) is not this user's own, or undefined. */
export function fileDistrust(label: string, path: string, stat: Stats, uid: number | undefined): string | undefined {
  if (stat.isSymbolicLink()) return `${label} ${path} is a link (owner uid ${stat.uid})`;
  if (uid !== undefined && stat.uid !== uid)
    return `${label} ${path} belongs to uid ${stat.uid}, another user than this process (uid ${uid})`;
  return undefined;
}
