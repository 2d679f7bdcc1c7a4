/**
 * Something slow to make (the compiled binary, a release made from it) made once per content of
 * its inputs, however many test processes ask for it at once: `bun test --parallel` runs files in
 * several processes, each with its own module registry, so a promise held in a module no longer
 * shares the work, and two builds writing one outfile while a third process runs it would collide.
 * A directory made with mkdir is the lock (atomic; a holder that died is noticed by its pid), and
 * a stamp beside the output names the inputs it was made from.
 */

import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";

/** A SHA-256 over the given files, and every file under the given directories, with their paths. */
export function inputsKey(root: string, paths: readonly string[], extra: readonly string[] = []): string {
  const hasher = new Bun.CryptoHasher("sha256");
  for (const value of extra) hasher.update(`${value}\0`);
  for (const path of paths) {
    const full = join(root, path);
    const files = statSync(full).isDirectory()
      ? readdirSync(full, { recursive: true, encoding: "utf8" })
          .map((name) => join(path, name))
          .filter((name) => statSync(join(root, name)).isFile())
          .toSorted()
      : [path];
    for (const file of files) {
      hasher.update(`${file}\0`);
      hasher.update(readFileSync(join(root, file)));
      hasher.update("\0");
    }
  }
  return hasher.digest("hex");
}

const POLL_MS = 200;

/**
 * Resolves once `stamp` holds `key`: at once when it already does, else after this process
 * (holding `lock`) or another one made it. `make` must put its output in place (by rename, so a
 * process reading it never sees half of it); the stamp is written after it.
 */
export async function madeOnce(options: {
  lock: string;
  stamp: string;
  key: string;
  timeoutMs: number;
  make: () => Promise<void>;
}): Promise<void> {
  const { lock, stamp, key } = options;
  const deadline = performance.now() + options.timeoutMs;
  // A fresh checkout has no dist/ yet.
  mkdirSync(dirname(lock), { recursive: true });
  for (;;) {
    if (readOr(stamp) === key) return;
    if (tryLock(lock)) {
      try {
        // Another process may have made it between the read above and the lock.
        if (readOr(stamp) !== key) {
          await options.make();
          writeFileSync(`${stamp}.${process.pid}`, key);
          renameSync(`${stamp}.${process.pid}`, stamp);
        }
      } finally {
        rmSync(lock, { recursive: true, force: true });
      }
      return;
    }
    if (performance.now() > deadline)
      throw new Error(
        `${stamp} was not made within ${options.timeoutMs} ms (lock ${lock} held by pid ${readOr(join(lock, "pid")) ?? "?"})`,
      );
    await Bun.sleep(POLL_MS);
  }
}

function readOr(path: string): string | undefined {
  try {
    return readFileSync(path, "utf8");
  } catch {
    return undefined;
  }
}

/** Takes the lock, or removes it when its holder has died (a test process killed mid-build) so the next try can. */
function tryLock(lock: string): boolean {
  try {
    mkdirSync(lock);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== "EEXIST") throw error;
    const holder = Number(readOr(join(lock, "pid")));
    // No pid yet: its holder is between mkdir and the write; wait for it.
    if (Number.isInteger(holder) && holder > 0 && !alive(holder)) rmSync(lock, { recursive: true, force: true });
    return false;
  }
  writeFileSync(join(lock, "pid"), String(process.pid));
  return true;
}

function alive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === "EPERM";
  }
}
