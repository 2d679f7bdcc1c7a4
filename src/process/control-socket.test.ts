import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { holdControlSocket } from "./control-socket.ts";

const dir = mkdtempSync(join(tmpdir(), "control-socket-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A raw connection and when it ended, by whom: what a stray client of the socket sees. */
function rawClient(path: string): Promise<{ socket: net.Socket; closed: Promise<string> }> {
  return new Promise((resolve, reject) => {
    const socket = net.createConnection(path);
    let received = "";
    socket.setEncoding("utf8");
    socket.on("data", (chunk: string) => (received += chunk));
    socket.on("error", () => {});
    const closed = new Promise<string>((done) => socket.once("close", () => done(received)));
    socket.once("connect", () => resolve({ socket, closed }));
    socket.once("error", reject);
  });
}

describe("the control socket's bounds: whatever can open it cannot hold the proxy's memory or connections", () => {
  test("a connection over the limit is told it is busy and closed at once, one that sends a request line over its byte bound or stays idle is closed; a request within them is answered", async () => {
    const path = join(dir, "bounds.sock");
    const control = await holdControlSocket(path, { connections: 2, requestBytes: 1024, idleMs: 300 });
    control.serve(() => Promise.resolve({ ok: true }));
    try {
      const idle = await rawClient(path);
      const oversize = await rawClient(path);
      const extra = await rawClient(path);
      expect(await extra.closed).toBe('{"error":"busy: 2 connections open, the most at once"}\n');
      oversize.socket.write("x".repeat(2048));
      expect(await oversize.closed).toBe("");
      const asking = await rawClient(path);
      asking.socket.write('{"op":"hello"}\n');
      expect(await idle.closed).toBe("");
      // Answered, then closed once idle in turn.
      expect(await asking.closed).toBe('{"ok":true}\n');
    } finally {
      control.close();
    }
  });
});
