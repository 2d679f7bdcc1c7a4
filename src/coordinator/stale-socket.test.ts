import { afterEach, expect, test } from "bun:test";
import { existsSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { removeStaleSocket } from "./stale-socket.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function socketPathInNewDir(): string {
  const dir = mkdtempSync(join(tmpdir(), "stale-socket-"));
  dirs.push(dir);
  return join(dir, "coordinator.sock");
}

/** A process that listens on `path`, as a coordinator does; killed, it leaves the file behind. */
async function listenerProcess(path: string): Promise<Bun.Subprocess<"ignore", "pipe", "inherit">> {
  const script = `Bun.serve({ unix: ${JSON.stringify(path)}, fetch: () => new Response("") }); console.log("listening");`;
  const child = Bun.spawn([process.execPath, "-e", script], { stdout: "pipe" });
  const reader = child.stdout.getReader();
  await reader.read();
  reader.releaseLock();
  return child;
}

test("the socket file of a killed coordinator is removed, so the next one can listen there", async () => {
  const path = socketPathInNewDir();
  const child = await listenerProcess(path);
  child.kill("SIGKILL");
  await child.exited;
  expect(existsSync(path)).toBe(true);
  expect(await removeStaleSocket(path)).toBe(true);
  expect(existsSync(path)).toBe(false);
  const next = Bun.serve({ unix: path, fetch: () => new Response("") });
  await next.stop(true);
});

test("a socket something still listens on is kept, and so is a file that is not a socket", async () => {
  const path = socketPathInNewDir();
  const child = await listenerProcess(path);
  try {
    expect(await removeStaleSocket(path)).toBe(false);
    expect(existsSync(path)).toBe(true);
  } finally {
    child.kill("SIGKILL");
    await child.exited;
  }
  const plain = socketPathInNewDir();
  writeFileSync(plain, "not a socket");
  expect(await removeStaleSocket(plain)).toBe(false);
  expect(existsSync(plain)).toBe(true);
  expect(await removeStaleSocket(join(plain, "..", "absent.sock"))).toBe(false);
});
