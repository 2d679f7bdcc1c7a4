/**
 * Whether a directory or file on this host is this user's alone: the runtime directory that
 * holds the port's control socket (process/runtime-dir.ts) and the request trace directory
 * (observability/request-trace.ts). A directory another user owns or may write can hold a
 * socket that lies, or a link that sends prompts elsewhere.
 */

import { realpathSync, statSync, type Stats } from "node:fs";
import { dirname, resolve } from "node:path";

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

/**
 * Why a directory above `path` (as given and as resolved) lets another user replace it, or
 * undefined: one another user than root owns, or that others may write without the sticky bit
 * (/tmp's). Such a user could move `path` aside after the checks and put a link in its place.
 */
export function ancestorDistrust(label: string, path: string, uid: number | undefined): string | undefined {
  for (const start of new Set([resolve(path), realpathSync(path)])) {
    for (let above = dirname(start); ; above = dirname(above)) {
      const stat = statSync(above);
      const facts = `${label} ${path}: the directory above it ${above} (mode ${modeText(stat.mode)}, owner uid ${stat.uid})`;
      if (uid !== undefined && stat.uid !== uid && stat.uid !== 0) return `${facts} belongs to another user, who could replace it`;
      if ((stat.mode & 0o002) !== 0 && (stat.mode & 0o1000) === 0) return `${facts} may be written by other users, who could replace it`;
      if (dirname(above) === above) break;
    }
  }
  return undefined;
}
