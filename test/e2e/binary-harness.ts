import { mkdirSync, renameSync, rmSync } from "node:fs";
import { join } from "node:path";
import { sourceCommit } from "../../scripts/build.ts";
import { inputsKey, madeOnce } from "../support/built-once.ts";

const ROOT = join(import.meta.dir, "..", "..");
export const BINARY = join(ROOT, "dist", "disagg-proxy");

/** What the binary is built from: a change to any of these (or another commit, which it names) builds it again. */
const INPUTS = [
  "src",
  "scripts/build.ts",
  "scripts/release/runtime.ts",
  "package.json",
  "package-lock.json",
  "tsconfig.json",
  "bunfig.toml",
];

/**
 * Builds dist/disagg-proxy unless it was already built from these sources (a stale binary would
 * test old code); one build at a time across the processes of a parallel test run.
 */
export function ensureBinary(): Promise<void> {
  const key = inputsKey(ROOT, INPUTS, [Bun.revision, sourceCommit(ROOT)]);
  return madeOnce({
    lock: `${BINARY}.lock`,
    stamp: `${BINARY}.inputs`,
    key,
    timeoutMs: 180_000,
    async make() {
      // Built beside it and renamed into place: a test still running the old binary keeps it, and the
      // outfile's base name (which the binary embeds) stays disagg-proxy.
      const dir = join(ROOT, "dist", `.build-${process.pid}`);
      mkdirSync(dir, { recursive: true });
      try {
        const build = Bun.spawn([process.execPath, "scripts/build.ts", "--outfile", join(dir, "disagg-proxy")], {
          cwd: ROOT,
          stdout: "inherit",
          stderr: "inherit",
        });
        if ((await build.exited) !== 0) throw new Error("build failed");
        renameSync(join(dir, "disagg-proxy.map"), `${BINARY}.map`);
        renameSync(join(dir, "disagg-proxy"), BINARY);
      } finally {
        rmSync(dir, { recursive: true, force: true });
      }
    },
  });
}

export type Child = Bun.Subprocess<"ignore", "pipe", "pipe">;

/** Spawns the binary and resolves with its first stdout line (the bound URL with --port 0). */
export async function spawnBinary(args: string[], children: Child[]): Promise<{ child: Child; url: string }> {
  const { child, url, log } = await spawnBinaryWithLog(args, children);
  // Keep draining stdout (request logs) so the child never blocks on a full pipe.
  void log.until(() => false);
  return { child, url };
}

/** The stdout lines of a child, read on demand. */
export interface LogLines {
  /** Lines read so far and up to the first one `done` accepts (or the end of the stream). */
  until(done: (line: string) => boolean): Promise<string[]>;
}

/** As spawnBinary, but the caller reads the log lines that follow the URL. */
export async function spawnBinaryWithLog(
  args: string[],
  children: Child[],
  env?: Record<string, string | undefined>,
): Promise<{ child: Child; url: string; log: LogLines }> {
  const child = Bun.spawn([BINARY, ...args], { stdin: "ignore", stdout: "pipe", stderr: "pipe", ...(env === undefined ? {} : { env }) });
  children.push(child);
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  const pending: string[] = [];
  let text = "";
  let ended = false;
  const readMore = async (): Promise<void> => {
    const { done, value } = await reader.read();
    if (done) ended = true;
    else text += decoder.decode(value, { stream: true });
    const parts = text.split("\n");
    text = parts.pop() ?? "";
    pending.push(...parts);
  };
  while (pending.length === 0) {
    if (ended) throw new Error(`binary exited early: ${await new Response(child.stderr).text()}`);
    await readMore();
  }
  const url = (pending.shift() ?? "").trim();
  const log: LogLines = {
    async until(done) {
      const lines: string[] = [];
      for (;;) {
        while (pending.length > 0) {
          const line = pending.shift() ?? "";
          lines.push(line);
          if (done(line)) return lines;
        }
        if (ended) return lines;
        await readMore();
      }
    },
  };
  return { child, url, log };
}

/** Emulated workers and the proxy, all from the binary, with the given proxy flags. */
export async function binaryCluster(
  children: Child[],
  workerFlags: { context: string[]; generation: string[] },
  proxyFlags: string[],
): Promise<string> {
  const context = await spawnBinary(["worker", "--role", "context", "--port", "0", ...workerFlags.context], children);
  const generation = await spawnBinary(["worker", "--role", "generation", "--port", "0", ...workerFlags.generation], children);
  const proxy = await spawnBinary(
    ["serve", "--port", "0", "--host", "127.0.0.1", "--context", context.url, "--generation", generation.url, ...proxyFlags],
    children,
  );
  for (let i = 0; i < 400; i++) {
    if ((await fetch(`${proxy.url}/health`)).status === 200) return proxy.url;
    await Bun.sleep(10);
  }
  throw new Error("proxy never became ready");
}
