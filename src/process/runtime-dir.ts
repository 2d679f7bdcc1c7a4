/**
 * Where the port's control socket lives (control-socket.ts): a directory only this user may
 * write, so that no other user can plant a socket there that a take-over would believe.
 */

import { lstatSync, mkdirSync, mkdtempSync, statSync } from "node:fs";
import { homedir, tmpdir } from "node:os";
import { join } from "node:path";
import { directoryDistrust } from "../security/private-paths.ts";

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
 * of its own in /tmp; made (0700) if needed. A given directory that another user owns or that
 * its group or others may write is refused (the error names its mode and owner). /tmp is
 * shared: when another user made the name first (or a link, or left it writable to others),
 * that one is not used, and the directory is `~/.cache/disagg-proxy` instead, which no other
 * user can make; every copy of this user makes that same choice. Without a usable home, it is a
 * fresh private directory in /tmp, and the note says that a take-over must name it.
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
  const uid = process.getuid?.();
  const shared = join(places.tmp, `disagg-proxy-${uid ?? "user"}`);
  try {
    mkdirSync(shared, { mode: 0o700 });
  } catch {
    // Already there, or a file or a dangling link by that name: the distrust says which.
  }
  const distrust = directoryDistrust("runtime directory", shared, lstatSync(shared), uid, "group or others");
  if (distrust === undefined) return { dir: shared };
  const own = join(places.home, ".cache", "disagg-proxy");
  try {
    ensureRuntimeDir(own);
    return { dir: own, note: `${distrust}: the control socket is in ${own} instead` };
  } catch (error) {
    const fresh = mkdtempSync(join(places.tmp, `disagg-proxy-${uid ?? "user"}-`));
    const why = error instanceof Error ? error.message : String(error);
    return {
      dir: fresh,
      note:
        `${distrust}, and ${why}: the control socket is in ${fresh} instead, a fresh directory of this process's own (0700); ` +
        `a --take-over of this process must be given --runtime-dir ${fresh}`,
    };
  }
}

/**
 * Makes the directory (0700) if needed and refuses one that is not private: another user's,
 * or one its group or others may write, could hold a socket that lies.
 */
export function ensureRuntimeDir(dir: string): void {
  mkdirSync(dir, { recursive: true, mode: 0o700 });
  const distrust = directoryDistrust("runtime directory", dir, statSync(dir), process.getuid?.(), "group or others");
  if (distrust !== undefined) throw new Error(`${distrust}: make it private (chmod 700, this user's) or give another --runtime-dir`);
}
