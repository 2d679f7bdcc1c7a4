import { describe, expect, test } from "bun:test";
import { networkInterfaces } from "node:os";
import { isOwnAddress, listenCovers } from "./listen-address.ts";

describe("listenCovers: whether a new listener takes every connection the running one takes", () => {
  test("the same addresses, or a wildcard over them, cover; a narrower address does not", () => {
    expect(listenCovers(["127.0.0.1"], ["127.0.0.1"])).toBe(true);
    expect(listenCovers(["0.0.0.0"], ["127.0.0.1"])).toBe(true);
    expect(listenCovers(["0.0.0.0"], ["0.0.0.0"])).toBe(true);
    expect(listenCovers(["::"], ["::1"])).toBe(true);
    expect(listenCovers(["127.0.0.1", "::1"], ["127.0.0.1"])).toBe(true);
    expect(listenCovers(["127.0.0.1"], ["0.0.0.0"])).toBe(false);
    expect(listenCovers(["127.0.0.1"], ["127.0.0.2"])).toBe(false);
    expect(listenCovers(["0.0.0.0"], ["::"])).toBe(false);
    expect(listenCovers(["0.0.0.0"], ["::1"])).toBe(false);
    expect(listenCovers(["127.0.0.1"], ["127.0.0.1", "::1"])).toBe(false);
    // A v6-only `::` looks as a dual-stack one in /proc: it is not taken to cover IPv4.
    expect(listenCovers(["::"], ["0.0.0.0"])).toBe(false);
    expect(listenCovers(["::"], ["127.0.0.1", "::1"])).toBe(false);
    expect(listenCovers(["::", "0.0.0.0"], ["127.0.0.1", "::1"])).toBe(true);
  });
});

describe("isOwnAddress: which listen addresses the port probe may connect to", () => {
  test("loopback and this machine's interface addresses are its own; an address elsewhere (TEST-NET) is not, so no probe leaves the machine", () => {
    expect(isOwnAddress("127.0.0.1")).toBe(true);
    expect(isOwnAddress("127.0.0.2")).toBe(true);
    expect(isOwnAddress("::1")).toBe(true);
    for (const entry of Object.values(networkInterfaces()).flat()) if (entry !== undefined) expect(isOwnAddress(entry.address)).toBe(true);
    expect(isOwnAddress("192.0.2.1")).toBe(false);
    expect(isOwnAddress("2001:db8::1")).toBe(false);
  });
});
