/**
 * The compiled binary lets go of its port only to a successor that serves the same socket: a
 * process of the same user listening on another address of the port (127.0.0.2) or in another
 * network namespace (`unshare -n`) that asks for the release is refused, logged with the
 * reason, and the proxy serves on (docs/security.md). A take-over whose control socket is full
 * or closes before answering says so in words: which process holds it, and what to do.
 */

import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import type { ProxyProcess, LogRecord } from "../../bench/upgrade/proxy-process.ts";
import { freePort } from "../support/etcd.ts";
import { binaryProcesses } from "./binary-processes.ts";

const { temp, serve, workers } = binaryProcesses();

/** Listens on HOST:PORT (IPV6_V6ONLY when told "v6only"), then asks the control socket for the release in its own name and prints the reply. */
const IMPOSTOR = `
import net from "node:net";
const [host, port, path, v6only] = process.argv.slice(2);
const server = net.createServer(() => {});
server.on("error", (error) => { console.log(JSON.stringify({ listenError: String(error) })); process.exit(1); });
server.listen({ port: Number(port), host, ipv6Only: v6only === "v6only" }, () => {
  const control = net.createConnection(path);
  let reply = "";
  control.setEncoding("utf8");
  control.on("data", (chunk) => { reply += chunk; if (reply.includes("\\n")) { process.stdout.write(reply); control.end(); server.close(); } });
  control.on("connect", () => control.write(JSON.stringify({ op: "release", pid: process.pid }) + "\\n"));
});
`;

const isListening = (record: LogRecord): boolean => record["msg"] === "listening";

async function servedProxy(name: string, host = "127.0.0.1"): Promise<{ proxy: ProxyProcess; port: number; socket: string; dir: string }> {
  const dir = temp.dir(`impostor-${name}-`);
  const port = freePort();
  const { context, generation } = workers();
  const args = ["--host", host, "--port", String(port), "--runtime-dir", dir, "--context", context.url, "--generation", generation.url];
  const proxy = serve(args, join(dir, `${name}.log`));
  await proxy.waitFor(isListening, 30_000, "listening");
  return { proxy, port, socket: join(dir, `disagg-proxy-${port}.sock`), dir };
}

/** The impostor's reply to its release request. */
async function impostor(
  prefix: readonly string[],
  host: string,
  port: number,
  socket: string,
  dir: string,
  v6only = false,
): Promise<Record<string, unknown>> {
  const script = join(dir, "impostor.ts");
  writeFileSync(script, IMPOSTOR);
  const child = Bun.spawn([...prefix, process.execPath, script, host, String(port), socket, v6only ? "v6only" : ""], {
    stdout: "pipe",
    stderr: "pipe",
  });
  const [out, err, code] = await Promise.all([new Response(child.stdout).text(), new Response(child.stderr).text(), child.exited]);
  if (code !== 0) throw new Error(`impostor exited ${code}: ${out}${err}`);
  return JSON.parse(out) as Record<string, unknown>;
}

async function answersOn(port: number): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}/health`, { headers: { connection: "close" } });
  return response.status;
}

describe("the release goes only to a successor serving the same socket (compiled binary)", () => {
  test("a process of the same user on 127.0.0.2:PORT asking for the release of 127.0.0.1:PORT is refused and logged; the proxy serves on", async () => {
    const { proxy, port, socket, dir } = await servedProxy("address");
    const reply = await impostor([], "127.0.0.2", port, socket, dir);
    expect(String(reply["error"])).toContain(`listens on 127.0.0.2:${port}, which does not take the connections of 127.0.0.1:${port}`);
    expect(reply["released"]).toBeUndefined();
    const logged = await proxy.waitFor((record) => String(record["msg"]).startsWith("refused to release the port: "), 5000, "the refusal");
    expect(String(logged["msg"])).toContain("127.0.0.2");
    expect(await answersOn(port)).toBe(200);
    expect(proxy.child.exitCode).toBeNull();
  }, 60_000);

  test("a process of the same user on [::]:PORT with IPV6_V6ONLY asking for the release of 0.0.0.0:PORT is refused: it takes no IPv4 connection", async () => {
    const { proxy, port, socket, dir } = await servedProxy("v6only", "0.0.0.0");
    const reply = await impostor([], "::", port, socket, dir, true);
    expect(String(reply["error"])).toContain(`listens on [::]:${port}, which does not take the connections of 0.0.0.0:${port}`);
    expect(reply["released"]).toBeUndefined();
    await proxy.waitFor((record) => String(record["msg"]).startsWith("refused to release the port: "), 5000, "the refusal");
    expect(await answersOn(port)).toBe(200);
    expect(proxy.child.exitCode).toBeNull();
  }, 60_000);

  test("a process in another network namespace (unshare -n) listening on the port is refused: its port is another port", async () => {
    const { proxy, port, socket, dir } = await servedProxy("namespace");
    const reply = await impostor(["unshare", "-n"], "127.0.0.1", port, socket, dir);
    expect(String(reply["error"])).toContain("is in another network namespace");
    await proxy.waitFor((record) => String(record["msg"]).includes("another network namespace"), 5000, "the refusal");
    expect(await answersOn(port)).toBe(200);
    expect(proxy.child.exitCode).toBeNull();
  }, 60_000);
});

/** A connection to the control socket that asked hello and got its answer: the holder counts it. */
function heldConnection(path: string): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(path, () => socket.write('{"op":"hello"}\n'));
    socket.setEncoding("utf8");
    socket.once("data", () => resolve(socket));
    socket.once("error", reject);
  });
}

function takeOver(port: number, dir: string): ProxyProcess {
  const args = ["--port", String(port), "--runtime-dir", dir, "--take-over", "--context", "127.0.0.1:1", "--generation", "127.0.0.1:2"];
  return serve(args, join(dir, "take-over.log"));
}

describe("a take-over that cannot ask the running proxy says why, in words (compiled binary)", () => {
  test("its control socket's 8 connections held: exit 2 naming the process that holds it and what to do, not a bare EPIPE; the proxy serves on", async () => {
    const { proxy, port, socket, dir } = await servedProxy("full");
    const held = await Promise.all(Array.from({ length: 8 }, () => heldConnection(socket)));
    try {
      const next = takeOver(port, dir);
      expect(await next.child.exited).toBe(2);
      expect(next.stderr).toContain(`the control socket ${socket} is held by pid ${proxy.pid} (`);
      expect(next.stderr).toContain("busy: 8 connections open");
      expect(next.stderr).toContain("takes 8 control connections at once: another take-over may be under way, or a client holds them");
      expect(await answersOn(port)).toBe(200);
    } finally {
      for (const connection of held) connection.destroy();
    }
  }, 60_000);

  test("a control socket whose holder closes before answering: exit 2 naming that holder", async () => {
    const dir = temp.dir("impostor-silent-");
    const port = freePort();
    const path = join(dir, `disagg-proxy-${port}.sock`);
    const silent = net.createServer((connection) => connection.destroy());
    await new Promise<void>((resolve) => silent.listen(path, resolve));
    try {
      const next = takeOver(port, dir);
      expect(await next.child.exited).toBe(2);
      expect(next.stderr).toContain(`the control socket ${path} is held by pid ${process.pid} (`);
      expect(next.stderr).toContain("which did not say who it is");
      expect(next.stderr).toContain(`If pid ${process.pid}`);
    } finally {
      silent.close();
    }
  }, 60_000);
});
