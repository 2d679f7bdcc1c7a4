import { describe, expect, test } from "bun:test";
import { DisaggIdAllocator } from "./disagg-id.ts";

const now = (): number => 1_700_000_000_000;

describe("DisaggIdAllocator", () => {
  test("ids are at least 2^40 and below 2^63 - 1", () => {
    const ids = new DisaggIdAllocator(7);
    for (let i = 0; i < 5000; i++) {
      const id = ids.next();
      expect(id >= 1n << 40n).toBe(true);
      expect(id < (1n << 63n) - 1n).toBe(true);
    }
  });

  test("ids within one millisecond are distinct for up to 1024 allocations", () => {
    const ids = new DisaggIdAllocator(1, { now: () => 1_700_000_000_000 });
    const seen = new Set<bigint>();
    for (let i = 0; i < 1024; i++) seen.add(ids.next());
    expect(seen.size).toBe(1024);
  });

  test("the node id is part of the id so two proxies at the same instant differ", () => {
    expect(new DisaggIdAllocator(1, { now }).next()).not.toBe(new DisaggIdAllocator(2, { now }).next());
  });

  test("an id is the snowflake upstream makes: 39 bits of ms, node, process, counter, mapped above 2^40", () => {
    const floor = 1n << 40n;
    const span = (1n << 63n) - 1n - floor;
    for (const [ms, node, process] of [
      [1_700_000_000_000.7, 7, 3],
      [2 ** 39 + 5, 255, 63],
      [2 ** 40 - 1, 0, 70],
    ] as const) {
      const ids = new DisaggIdAllocator(node, { processId: process, now: () => ms });
      for (let counter = 1n; counter <= 3n; counter++) {
        const raw =
          ((BigInt(Math.floor(ms)) & ((1n << 39n) - 1n)) << 24n) | (BigInt(node) << 16n) | ((BigInt(process) & 63n) << 10n) | counter;
        expect(ids.next()).toBe((raw % span) + floor);
      }
    }
  });

  test("a node id outside 0..255 is refused", () => {
    expect(() => new DisaggIdAllocator(256)).toThrow(RangeError);
  });
});
