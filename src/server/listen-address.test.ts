import { describe, expect, test } from "bun:test";
import { listenCovers } from "./listen-address.ts";

describe("listenCovers: whether a new listener takes every connection the running one takes", () => {
  test("the same addresses, or a wildcard over them, cover; a narrower address does not", () => {
    expect(listenCovers(["127.0.0.1"], ["127.0.0.1"])).toBe(true);
    expect(listenCovers(["0.0.0.0"], ["127.0.0.1"])).toBe(true);
    expect(listenCovers(["0.0.0.0"], ["0.0.0.0"])).toBe(true);
    expect(listenCovers(["::"], ["0.0.0.0"])).toBe(true);
    expect(listenCovers(["::"], ["::1"])).toBe(true);
    expect(listenCovers(["127.0.0.1", "::1"], ["127.0.0.1"])).toBe(true);
    expect(listenCovers(["127.0.0.1"], ["0.0.0.0"])).toBe(false);
    expect(listenCovers(["127.0.0.1"], ["127.0.0.2"])).toBe(false);
    expect(listenCovers(["0.0.0.0"], ["::"])).toBe(false);
    expect(listenCovers(["0.0.0.0"], ["::1"])).toBe(false);
    expect(listenCovers(["127.0.0.1"], ["127.0.0.1", "::1"])).toBe(false);
  });
});
