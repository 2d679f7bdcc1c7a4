/**
 * The request trace's files are private by construction, whatever the umask: they hold every
 * prompt and answer. The trace directory is made 0700 and refused when another user owns it or
 * others may write it (a planted link would take the lines elsewhere); each hour directory is
 * made 0700 and never followed when it is a link; each file is opened with O_NOFOLLOW, made
 * 0600, and must be this user's. A directory above it that another user may change is refused
 * too: those checks hold only while nobody else can swap the path for a link after them. A
 * systemd unit's UMask=0077 is then no longer what protects.
 */

import { constants, mkdirSync, statSync } from "node:fs";
import { chmod, lstat, mkdir, open } from "node:fs/promises";
import { dirname } from "node:path";
import { ancestorDistrust, directoryDistrust, fileDistrust } from "../security/private-paths.ts";

const FILE_FLAGS = constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW;

/**
 * Makes the trace directory (0700) if needed; why it cannot hold the trace, or undefined. The
 * given path may be a link (the operator's choice); what it names is checked.
 */
export function traceDirRefusal(dir: string, uid: number | undefined = process.getuid?.()): string | undefined {
  try {
    mkdirSync(dir, { recursive: true, mode: 0o700 });
    return (
      directoryDistrust("request trace directory", dir, statSync(dir), uid, "others") ??
      ancestorDistrust("request trace directory", dir, uid)
    );
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

/**
 * An append for the trace writer: the hour directory checked as writes move into it, each file
 * opened anew without following a link. Only the last hour is remembered (a set of every hour
 * would grow for as long as the proxy runs); going back to an earlier one checks it again.
 */
export function privateAppender(uid: number | undefined = process.getuid?.()): (path: string, data: string) => Promise<void> {
  let checked: string | undefined;
  return async (path, data) => {
    const dir = dirname(path);
    if (dir !== checked) {
      await privateHourDir(dir, uid);
      checked = dir;
    }
    const file = await open(path, FILE_FLAGS, 0o600);
    try {
      const stat = await file.stat();
      const distrust = fileDistrust("request trace file", path, stat, uid);
      if (distrust !== undefined) throw new Error(distrust);
      // A file an earlier release made under a looser umask is made private too.
      if ((stat.mode & 0o077) !== 0) await file.chmod(0o600);
      await file.appendFile(data, "utf8");
    } finally {
      await file.close();
    }
  };
}

/** The hour directory, made 0700; one that is a link or another user's is refused (its lines are not written). */
async function privateHourDir(dir: string, uid: number | undefined): Promise<void> {
  await mkdir(dir, { mode: 0o700 }).catch((error: unknown) => {
    if (!(typeof error === "object" && error !== null && "code" in error && error.code === "EEXIST")) throw error;
  });
  const stat = await lstat(dir);
  const distrust = directoryDistrust("request trace hour directory", dir, stat, uid, "others");
  if (distrust !== undefined) throw new Error(`${distrust}: its lines are not written`);
  if ((stat.mode & 0o077) !== 0) await chmod(dir, 0o700);
}
