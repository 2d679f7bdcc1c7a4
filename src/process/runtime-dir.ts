/**
 * Where the port's control socket lives (control-socket.ts): a directory only this user may
 * write, so that no other user can plant a socket there that a take-over would believe.
 */

import { lstatSync, mkdirSync, statSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";

/** Where a runtime directory may go when none is configured: the shared temporary directory, and the user's home. */
export interface RuntimePlaces {
  readonly tmp: string;
  readonly home: string;
}

/** The runtime directory chosen, made if needed; `note` says why it is not the usual one. */
export interface RuntimeDir {
  readonly dir: string;
  readonly note?: string;
}

/**
 * --runtime-dir, else systemd's RuntimeDirectory=, else the user's runtime directory, else one
 * of its own in /tmp; made (0700) if needed. /tmp is shared: when another user made the name
 * first (or a link, or left it writable to others), that one is not used, and the directory is
 * `~/.cache/disagg-proxy` instead, which no other user can make. Every copy of the proxy of
 * this user makes the same choice, as it depends on the /tmp name's owner alone.
 */
export function runtimeDirOf(
  configured: string | undefined,
  env: Readonly<Record<string, string | undefined>>,
  places: RuntimePlaces = { tmp: tmpdir(), home: homedir() },
): RuntimeDir {
  // systemd gives several directories colon-separated when the unit names several.
  const chosen =
    configured ??
    (env["RUNTIME_DIRECTORY"]?.split(":")[0] || undefined) ??
    (env["XDG_RUNTIME_DIR"] ? join(env["XDG_RUNTIME_DIR"], "disagg-proxy") : undefined);
  if (chosen !== undefined) {
    ensureRuntimeDir(chosen);
    return { dir: chosen };
  }
  const shared = join(places.tmp, `disagg-proxy-${process.getuid?.() ?? "user"}`);
  try {
    mkdirSync(shared, { recursive: true, mode: 0o700 });
  } catch {
    // A file or a dangling link by that name: distrustOf says which (or lstat why not).
  }
  const distrust = distrustOf(shared);
  if (distrust === undefined) return { dir: shared };
  const own = join(places.home, ".cache", "disagg-proxy");
  try {
    ensureRuntimeDir(own);
  } catch (error) {
    throw new Error(`${distrust}, and ${error instanceof Error ? error.message : String(error)}`, { cause: error });
  }
  return { dir: own, note: `${distrust}: the control socket is in ${own} instead` };
}

/** Why a directory in /tmp could hold a socket that another user put there, or undefined. */
function distrustOf(dir: string): string | undefined {
  const stat = lstatSync(dir);
  const uid = process.getuid?.();
  if (!stat.isDirectory()) return `runtime directory ${dir} is not a directory (a link?)`;
  if (uid !== undefined && stat.uid !== uid) return `runtime directory ${dir} belongs to uid ${stat.uid}, not to this process (uid ${uid})`;
  if ((stat.mode & 0o022) !== 0) return `runtime directory ${dir} may be written by other users (mode ${(stat.mode & 0o777).toString(8)})`;
  return undefined;
}

/** Makes the directory (0700) if needed; one owned by another user could hold a socket that lies. */
export function ensureRuntimeDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const owner = statSync(dir).uid;
  const uid = process.getuid?.();
  if (uid !== undefined && owner !== uid)
    throw new Error(`runtime directory ${dir} belongs to uid ${owner}, not to this process (uid ${uid}): give --runtime-dir`);
}
