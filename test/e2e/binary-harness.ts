import { join } from "node:path";

const ROOT = join(import.meta.dir, "..", "..");
export const BINARY = join(ROOT, "dist", "disagg-proxy");

let built: Promise<void> | undefined;

/** Builds dist/disagg-proxy once per test run (a stale binary would test old code). */
export function ensureBinary(): Promise<void> {
  built ??= (async () => {
    const build = Bun.spawn([process.execPath, "scripts/build.ts"], { cwd: ROOT, stdout: "inherit", stderr: "inherit" });
    if ((await build.exited) !== 0) throw new Error("build failed");
  })();
  return built;
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
export async function spawnBinaryWithLog(args: string[], children: Child[], env?: Record<string, string | undefined>): Promise<{ child: Child; url: string; log: LogLines }> {
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
