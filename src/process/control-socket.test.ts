import { afterAll, describe, expect, test } from "bun:test";
import { chmodSync, chownSync, mkdirSync, mkdtempSync, rmSync, statSync, symlinkSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { holdControlSocket, runtimeDirOf } from "./control-socket.ts";

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
  test("a connection over the limit is closed at once, one that sends a request line over its byte bound or stays idle is closed; a request within them is answered", async () => {
    const path = join(dir, "bounds.sock");
    const control = await holdControlSocket(path, { connections: 2, requestBytes: 1024, idleMs: 300 });
    control.serve(() => Promise.resolve({ ok: true }));
    try {
      const idle = await rawClient(path);
      const oversize = await rawClient(path);
      const extra = await rawClient(path);
      expect(await extra.closed).toBe("");
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

describe("the default runtime directory in /tmp, which other users can make first", () => {
  test("one this user made is used; one another user made first, a link, or one others may write is not: the control socket goes to ~/.cache/disagg-proxy (0700) instead, and the note says why", () => {
    const uid = process.getuid?.() ?? 0;
    const cases: [string, (path: string) => void, string][] = [
      ["ours", (path) => mkdirSync(path, { mode: 0o700 }), ""],
      [
        "foreign",
        (path) => {
          mkdirSync(path, { mode: 0o777 });
          chownSync(path, uid + 1, uid + 1);
        },
        `belongs to uid ${uid + 1}`,
      ],
      ["link", (path) => symlinkSync(mkdtempSync(join(dir, "elsewhere-")), path), "is not a directory (a link?)"],
      [
        "writable",
        (path) => {
          mkdirSync(path);
          chmodSync(path, 0o777);
        },
        "may be written by other users (mode 777)",
      ],
    ];
    for (const [name, prepare, why] of cases) {
      const places = { tmp: join(dir, `tmp-${name}`), home: join(dir, `home-${name}`) };
      mkdirSync(places.tmp);
      const shared = join(places.tmp, `disagg-proxy-${uid}`);
      prepare(shared);
      const chosen = runtimeDirOf(undefined, {}, places);
      if (why === "") {
        expect(chosen).toEqual({ dir: shared });
        continue;
      }
      const own = join(places.home, ".cache", "disagg-proxy");
      expect(chosen.dir).toBe(own);
      expect(chosen.note).toContain(why);
      expect(statSync(own).mode & 0o777).toBe(0o700);
      // The next copy makes the same choice.
      expect(runtimeDirOf(undefined, {}, places).dir).toBe(own);
    }
  });

  test("a configured directory, systemd's or the user's runtime directory is used as it is, never the /tmp default", () => {
    const places = { tmp: join(dir, "tmp-unused"), home: join(dir, "home-unused") };
    const configured = join(dir, "configured");
    expect(runtimeDirOf(configured, { XDG_RUNTIME_DIR: join(dir, "xdg") }, places)).toEqual({ dir: configured });
    expect(runtimeDirOf(undefined, { RUNTIME_DIRECTORY: `${join(dir, "systemd")}:${join(dir, "other")}` }, places)).toEqual({
      dir: join(dir, "systemd"),
    });
    expect(runtimeDirOf(undefined, { XDG_RUNTIME_DIR: join(dir, "xdg") }, places)).toEqual({ dir: join(dir, "xdg", "disagg-proxy") });
  });
});
