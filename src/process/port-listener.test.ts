import { describe, expect, test } from "bun:test";
import { listeningInodes, listensOn } from "./port-listener.ts";

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

  test("only sockets in LISTEN state on the port count, IPv4 and IPv6 alike", () => {
    const table = [
      "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode",
      "   0: 0100007F:1F90 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 111 1 0 100 0 0 10 0",
      "   1: 0100007F:1F90 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 222 1 0 20 4 30 10 -1",
      "   2: 0100007F:1F91 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 333 1 0 100 0 0 10 0",
      "   3: 00000000000000000000000000000000:1F90 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 444 1 0 100 0 0 10 0",
    ].join("\n");
    expect(listeningInodes(table, 8080)).toEqual(["111", "444"]);
    expect(listeningInodes(table, 8081)).toEqual(["333"]);
    expect(listeningInodes(table, 80)).toEqual([]);
  });
});
