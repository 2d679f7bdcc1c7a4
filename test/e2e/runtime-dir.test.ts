/**
 * The compiled binary keeps its control socket where only its user can write (docs/security.md):
 * a runtime directory others may write is refused, a socket another user planted is never spoken
 * to, and a squatted /tmp/disagg-proxy-<uid> with no usable home falls back to a fresh private
 * directory. Another user is uid 65534 (nobody), made owner with chown: the tests run as root.
 */

import { describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, readdirSync, statSync, writeFileSync } from "node:fs";
import net from "node:net";
import { join } from "node:path";
import type { ProxyProcess, LogRecord } from "../../bench/upgrade/proxy-process.ts";
import { freePort } from "../support/etcd.ts";
import { binaryProcesses } from "./binary-processes.ts";

const NOBODY = 65534;
const uid = process.getuid?.() ?? 0;
const { temp, serve, workers } = binaryProcesses();
let spawned = 0;

function spawn(args: readonly string[], logDir: string, env?: Record<string, string | undefined>): ProxyProcess {
  return serve(args, join(logDir, `proxy-${spawned++}.log`), env);
}

/** A socket at `path` that answers hello as a proxy would, owned by another user; counts who connects. */
async function plantedSocket(path: string): Promise<{ connections: () => number; close: () => void }> {
  let connections = 0;
  const server = net.createServer((socket) => {
    connections++;
    socket.on("data", () =>
      socket.write(`${JSON.stringify({ pid: 1, version: "9.9.9", startedAt: new Date().toISOString(), registrations: [] })}\n`),
    );
    socket.on("error", () => {});
  });
  await new Promise<void>((resolve) => server.listen(path, resolve));
  chownSync(path, NOBODY, NOBODY);
  return { connections: () => connections, close: () => server.close() };
}

/** Asks hello on the control socket given; prints the answer, or the connection's error code. */
const HELLO = `
const net = require("node:net");
const socket = net.createConnection(process.argv.at(-1), () => socket.write('{"op":"hello"}\\n'));
socket.on("data", (chunk) => { console.log(String(chunk)); process.exit(0); });
socket.on("error", (error) => { console.log(error.code); process.exit(0); });
`;

const stderrLines = (proxy: ProxyProcess): string[] => proxy.stderr.trim().split("\n");

describe("the runtime directory is this user's alone (compiled binary)", () => {
  test("a --runtime-dir others may write (1777) is refused with exit 2, one line naming its path, mode and owner; the socket another user planted in it is never spoken to", async () => {
    const dir = temp.dir("runtime-sticky-");
    chmodSync(dir, 0o1777);
    const port = freePort();
    const planted = await plantedSocket(join(dir, `disagg-proxy-${port}.sock`));
    try {
      const proxy = spawn(
        ["--port", String(port), "--runtime-dir", dir, "--take-over", "--context", "127.0.0.1:1", "--generation", "127.0.0.1:2"],
        temp.dir("log-"),
      );
      expect(await proxy.child.exited).toBe(2);
      expect(stderrLines(proxy)).toHaveLength(1);
      expect(proxy.stderr).toContain(`runtime directory ${dir} (mode 1777, owner uid ${uid}) may be written by its group or other users`);
      expect(planted.connections()).toBe(0);
    } finally {
      planted.close();
    }
  }, 30_000);

  test("under umask 000 in a 0755 runtime directory (systemd's RuntimeDirectory= mode), the control socket is 0600: another user cannot ask it anything", async () => {
    const dir = temp.dir("runtime-0755-");
    chmodSync(dir, 0o755);
    const port = freePort();
    const { context, generation } = workers();
    const umask = process.umask(0);
    const proxy = (() => {
      try {
        const args = ["--port", String(port), "--context", context.url, "--generation", generation.url];
        return spawn(args, temp.dir("log-"), { ...process.env, RUNTIME_DIRECTORY: dir });
      } finally {
        process.umask(umask);
      }
    })();
    await proxy.waitFor((record: LogRecord) => record["msg"] === "listening", 30_000, "listening");
    const socket = join(dir, `disagg-proxy-${port}.sock`);
    expect(statSync(socket).mode & 0o777).toBe(0o600);
    const asked = Bun.spawnSync([
      "setpriv",
      `--reuid=${NOBODY}`,
      `--regid=${NOBODY}`,
      "--clear-groups",
      process.execPath,
      "-e",
      HELLO,
      socket,
    ]);
    expect(asked.stdout.toString()).toContain("EACCES");
  }, 30_000);

  test("in a private runtime directory, a control socket another user owns is never spoken to: exit 2 naming its owner", async () => {
    const dir = temp.dir("runtime-planted-");
    const port = freePort();
    const socket = join(dir, `disagg-proxy-${port}.sock`);
    const planted = await plantedSocket(socket);
    try {
      const proxy = spawn(
        ["--port", String(port), "--runtime-dir", dir, "--take-over", "--context", "127.0.0.1:1", "--generation", "127.0.0.1:2"],
        temp.dir("log-"),
      );
      expect(await proxy.child.exited).toBe(2);
      expect(stderrLines(proxy)).toHaveLength(1);
      expect(proxy.stderr).toContain(`control socket ${socket} belongs to uid ${NOBODY}, another user than this process (uid ${uid})`);
      expect(planted.connections()).toBe(0);
    } finally {
      planted.close();
    }
  }, 30_000);

  test("/tmp/disagg-proxy-<uid> squatted by another user and no usable home: the proxy starts with a fresh private directory and says so; a second copy is still refused", async () => {
    const tmp = temp.dir("runtime-squat-");
    const squatted = join(tmp, `disagg-proxy-${uid}`);
    mkdirSync(squatted, { mode: 0o777 });
    chownSync(squatted, NOBODY, NOBODY);
    // A home under a file: no ~/.cache can be made there, even by root.
    const home = join(tmp, "home-is-a-file", "user");
    writeFileSync(join(tmp, "home-is-a-file"), "");
    const env = { ...process.env, TMPDIR: tmp, HOME: home };
    const { context, generation } = workers();
    const args = ["--port", String(freePort()), "--context", context.url, "--generation", generation.url];
    const proxy = spawn(args, temp.dir("log-"), env);
    await proxy.waitFor((record: LogRecord) => record["msg"] === "listening", 30_000, "listening");
    const note = proxy.records.find((record) => String(record["msg"]).includes("a fresh directory of this process's own"));
    expect(String(note?.["msg"])).toContain(
      `runtime directory ${squatted} (mode ${(statSync(squatted).mode & 0o777).toString(8)}, owner uid ${NOBODY}) belongs to another user`,
    );
    const fresh = readdirSync(tmp).filter((name) => name.startsWith(`disagg-proxy-${uid}-`));
    expect(fresh).toHaveLength(1);
    expect(statSync(join(tmp, fresh[0] ?? "")).mode & 0o777).toBe(0o700);
    const second = spawn(args, temp.dir("log-"), env);
    expect(await second.child.exited).toBe(2);
    expect(second.stderr).toContain("the port is already in use");
  }, 60_000);
});
