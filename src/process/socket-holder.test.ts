import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, rmSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { listeningInode, socketHolder } from "./socket-holder.ts";

const dir = mkdtempSync(join(tmpdir(), "socket-holder-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe("socketHolder: which process listens on a Unix socket path", () => {
  test("the listening socket's inode is read from /proc/net/unix; a connected one on the same path is not it", () => {
    const table = [
      "Num       RefCount Protocol Flags    Type St Inode Path",
      "0000000000000000: 00000003 00000000 00000000 0001 03 222 /run/x.sock",
      "0000000000000000: 00000002 00000000 00010000 0001 01 111 /run/x.sock",
      "0000000000000000: 00000002 00000000 00010000 0001 01 333 /run/with space.sock",
    ].join("\n");
    expect(listeningInode(table, "/run/x.sock")).toBe("111");
    expect(listeningInode(table, "/run/with space.sock")).toBe("333");
    expect(listeningInode(table, "/run/none.sock")).toBeUndefined();
  });

  test("a socket this process listens on is found with its pid and command line; a path nobody listens on has no holder", async () => {
    const path = join(dir, "held.sock");
    const server = net.createServer(() => {});
    await new Promise<void>((resolve) => server.listen(path, resolve));
    try {
      const holder = await socketHolder(path);
      expect(holder?.pid).toBe(process.pid);
      expect(holder?.command).toContain("bun");
    } finally {
      server.close();
    }
    expect(await socketHolder(join(dir, "nobody.sock"))).toBeUndefined();
  });
});
