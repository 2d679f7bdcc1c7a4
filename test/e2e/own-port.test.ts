/**
 * A port is one program's: `demo` and `worker` started on a port a running proxy serves are
 * refused before they serve anything (only `serve --take-over` shares a port), and the demo's
 * default port is not serve's. On the compiled binary.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { freePort } from "../support/etcd.ts";
import { scratch } from "../support/scratch.ts";
import { eventually } from "../support/wait.ts";
import { BINARY, ensureBinary, spawnBinary, type Child } from "./binary-harness.ts";

const children: Child[] = [];
const others: Bun.Subprocess[] = [];
const temp = scratch();

afterAll(() => {
  for (const child of [...children, ...others]) child.kill("SIGKILL");
  temp.removeAll();
});

async function run(args: string[]): Promise<{ code: number; stderr: string }> {
  const child = Bun.spawn([BINARY, ...args], { stdin: "ignore", stdout: "pipe", stderr: "pipe" });
  others.push(child);
  // A command that started instead of refusing is stopped, so the test fails on its exit code, not its timeout.
  const timer = setTimeout(() => child.kill("SIGKILL"), 10_000);
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
  clearTimeout(timer);
  return { code, stderr };
}

/** The default a help page names for --port. */
function portDefault(help: string): string | undefined {
  return /--port PORT[^\n]*?\(default:? (\d+)\)/.exec(help)?.[1];
}

describe("a port one proxy serves is refused to demo and worker", () => {
  let port = 0;
  let proxyPid = 0;

  beforeAll(async () => {
    await ensureBinary();
    const context = await spawnBinary(["worker", "--role", "context", "--port", "0"], children);
    const generation = await spawnBinary(["worker", "--role", "generation", "--port", "0"], children);
    port = freePort();
    const proxy = Bun.spawn(
      [
        BINARY,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        String(port),
        "--runtime-dir",
        temp.dir("own-port-"),
        "--context",
        context.url,
        "--generation",
        generation.url,
      ],
      { stdin: "ignore", stdout: "ignore", stderr: "ignore" },
    );
    others.push(proxy);
    proxyPid = proxy.pid;
    await eventually(
      async () => (await fetch(`http://127.0.0.1:${port}/health`).catch(() => undefined))?.status === 200,
      20_000,
      "the proxy ready",
    );
  }, 60_000);

  test("demo --port on a served port exits 2 naming the address, and every request still reaches the proxy", async () => {
    const demo = await run(["demo", "--port", String(port)]);
    expect({ code: demo.code, stderr: demo.stderr.trim() }).toEqual({
      code: 2,
      stderr: `disagg-proxy: cannot listen on 127.0.0.1:${port}: the port is already in use (the demo never shares its port; give it another with --port)`,
    });
    // The demo's emulated model never answers here: all ten go to the proxy's workers.
    const pids = new Set<number>();
    for (let i = 0; i < 10; i++) {
      const data = (await (await fetch(`http://127.0.0.1:${port}/dashboard/data`, { headers: { connection: "close" } })).json()) as {
        proxy: { pid: number };
      };
      pids.add(data.proxy.pid);
    }
    expect([...pids]).toEqual([proxyPid]);
  }, 30_000);

  test("worker --port on a served port exits 2 naming the address", async () => {
    const worker = await run(["worker", "--role", "context", "--port", String(port)]);
    expect({ code: worker.code, stderr: worker.stderr.trim() }).toEqual({
      code: 2,
      stderr: `disagg-proxy: cannot listen on 127.0.0.1:${port}: the port is already in use`,
    });
  }, 30_000);

  test("demo and serve default to different ports (8080 and 8000)", async () => {
    const demoHelp = await new Response(Bun.spawn([BINARY, "demo", "--help"], { stdout: "pipe" }).stdout).text();
    const serveHelp = await new Response(Bun.spawn([BINARY, "serve", "--help"], { stdout: "pipe" }).stdout).text();
    expect([portDefault(demoHelp), portDefault(serveHelp)]).toEqual(["8080", "8000"]);
  });
});
