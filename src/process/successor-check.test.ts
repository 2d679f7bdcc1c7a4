import { describe, expect, test } from "bun:test";
import type { ListeningSocket } from "./port-listener.ts";
import { successorRefusal, type ProcessView } from "./successor-check.ts";

const SELF = 100;
const UID = 1000;
const PORT = 8000;

/** Processes by pid: their owner, namespace and listening sockets on PORT. */
function view(processes: Record<number, { owner?: number; ns?: string; listening: readonly Partial<ListeningSocket>[] }>): ProcessView {
  const of = (pid: number) => {
    const found = processes[pid];
    if (found === undefined) return Promise.reject(new Error(`ENOENT: /proc/${pid}`));
    return Promise.resolve(found);
  };
  return {
    listening: async (pid) =>
      (await of(pid)).listening.map((socket, i) => ({
        address: socket.address ?? "127.0.0.1",
        uid: socket.uid ?? UID,
        inode: String(pid * 10 + i),
      })),
    netNamespace: async (pid) => (await of(pid)).ns ?? "net:[4026531840]",
    owner: async (pid) => (await of(pid)).owner ?? UID,
  };
}

const ask = (pid: number | undefined, processes: Parameters<typeof view>[0]) =>
  successorRefusal({ pid, port: PORT, self: SELF, uid: UID }, view(processes));

describe("successorRefusal: the port goes only to a process that serves the same socket", () => {
  test("a successor of this user, in this namespace, on the same address or a wildcard covering it, gets the port", async () => {
    const serving = { [SELF]: { listening: [{ address: "127.0.0.1" }] } };
    for (const address of ["127.0.0.1", "0.0.0.0"])
      expect(await ask(200, { ...serving, 200: { listening: [{ address }] } })).toBeUndefined();
    const dual = { [SELF]: { listening: [{ address: "127.0.0.1" }, { address: "::1" }] } };
    expect(await ask(200, { ...dual, 200: { listening: [{ address: "0.0.0.0" }, { address: "::" }] } })).toBeUndefined();
    expect(await ask(200, { ...dual, 200: { listening: [{ address: "127.0.0.1" }, { address: "::1" }] } })).toBeUndefined();
  });

  test("another address, another namespace, another user, another user's socket, or no listener at all: refused, saying why", async () => {
    const serving = { [SELF]: { listening: [{ address: "127.0.0.1" }] } };
    expect(await ask(200, { ...serving, 200: { listening: [{ address: "127.0.0.2" }] } })).toBe(
      "no successor listening: pid 200 listens on 127.0.0.2:8000, which does not take the connections of 127.0.0.1:8000 that this process serves",
    );
    // /proc shows a v6-only `::` (IPV6_V6ONLY) as a dual-stack one: it never covers IPv4.
    expect(await ask(200, { ...serving, 200: { listening: [{ address: "::" }] } })).toContain(
      "does not take the connections of 127.0.0.1:8000",
    );
    const wide = { [SELF]: { listening: [{ address: "0.0.0.0" }] } };
    expect(await ask(200, { ...wide, 200: { listening: [{ address: "127.0.0.1" }] } })).toContain(
      "does not take the connections of 0.0.0.0:8000",
    );
    expect(await ask(200, { ...serving, 200: { ns: "net:[4026532999]", listening: [{ address: "127.0.0.1" }] } })).toBe(
      "no successor listening: pid 200 is in another network namespace (net:[4026532999], this process: net:[4026531840]), where port 8000 is another port",
    );
    expect(await ask(200, { ...serving, 200: { owner: 0, listening: [{ address: "127.0.0.1" }] } })).toBe(
      "no successor listening: pid 200 belongs to uid 0, not to this process's (uid 1000)",
    );
    expect(await ask(200, { ...serving, 200: { listening: [{ address: "127.0.0.1", uid: 65534 }] } })).toBe(
      "no successor listening: pid 200 does not listen on port 8000",
    );
    expect(await ask(200, { ...serving, 200: { listening: [] } })).toBe("no successor listening: pid 200 does not listen on port 8000");
    expect(await ask(300, serving)).toBe("no successor listening: cannot tell whether pid 300 serves port 8000 (ENOENT: /proc/300)");
    expect(await ask(undefined, serving)).toBe("no successor listening: the release names no process (pid) to serve the port");
    expect(await ask(SELF, serving)).toBe(`no successor listening: pid ${SELF} is this process`);
  });
});
