import { describe, expect, test } from "bun:test";
import { listeningSockets, listensOn, socketsListening } from "./port-listener.ts";

describe("listensOn: whether a process listens on a port, from /proc", () => {
  test("this process listens on the port it serves, and no longer once it stopped; a process that does not exist cannot be told", async () => {
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
    const port = server.port ?? 0;
    const listening = await listensOn(process.pid, port);
    await server.stop(true);
    expect([listening, await listensOn(process.pid, port)]).toEqual([true, false]);
    expect(
      await listensOn(2 ** 22 + 1, port).then(
        () => "told",
        () => "cannot tell",
      ),
    ).toBe("cannot tell");
  });

  test("only sockets in LISTEN state on the port count, IPv4 and IPv6 alike, each with its address and owner", () => {
    const table = [
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0 0 10 0",
      "   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0 20 4 30 10 -1",
      "   2: 0200007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1000        0 333 1 0 100 0 0 10 0",
      "   3: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 444 1 0 100 0 0 10 0",
      "   4: 00000000000000000000000001000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 555 1 0 100 0 0 10 0",
      "   5: 0000000000000000FFFF00000100007F:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 666 1 0 100 0 0 10 0",
      "   6: 000080FE00000000FF005452060B3FFE:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 777 1 0 100 0 0 10 0",
      "   7: 00000000:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 888 1 0 100 0 0 10 0",
    ].join("\n");
    expect(listeningSockets(table, 8080)).toEqual([
      { address: "127.0.0.1", uid: 0, inode: "111" },
      { address: "::", uid: 0, inode: "444" },
      { address: "::1", uid: 0, inode: "555" },
      { address: "127.0.0.1", uid: 0, inode: "666" },
      { address: "fe80::5254:ff:fe3f:b06", uid: 0, inode: "777" },
      { address: "0.0.0.0", uid: 0, inode: "888" },
    ]);
    expect(listeningSockets(table, 8081)).toEqual([{ address: "127.0.0.2", uid: 1000, inode: "333" }]);
    expect(listeningSockets(table, 80)).toEqual([]);
  });

  test("a process's own listener is found with the address it listens on and its uid", async () => {
    const server = Bun.serve({ port: 0, hostname: "127.0.0.1", fetch: () => new Response("ok") });
    try {
      const sockets = await socketsListening(process.pid, server.port ?? 0);
      expect(sockets.map(({ address, uid }) => ({ address, uid }))).toEqual([{ address: "127.0.0.1", uid: process.getuid?.() ?? 0 }]);
    } finally {
      await server.stop(true);
    }
  });
});
