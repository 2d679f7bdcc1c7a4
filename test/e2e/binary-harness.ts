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
  const child = Bun.spawn([BINARY, ...args], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  children.push(child);
  const reader = child.stdout.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes("\n")) {
    const { done, value } = await reader.read();
    if (done) throw new Error(`binary exited early: ${await new Response(child.stderr).text()}`);
    text += decoder.decode(value, { stream: true });
  }
  reader.releaseLock();
  // Keep draining stdout (request logs) so the child never blocks on a full pipe.
  void child.stdout.pipeTo(new WritableStream()).catch(() => {});
  return { child, url: text.slice(0, text.indexOf("\n")).trim() };
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
