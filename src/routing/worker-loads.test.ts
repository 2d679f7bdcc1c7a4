import { describe, expect, test } from "bun:test";
import { ReservationTable } from "./reservations.ts";
import { WorkerLoads } from "./worker-loads.ts";

const W = "http://w:1";

function setup(): { table: ReservationTable; loads: WorkerLoads; clock: { now: number }; changes: [string, boolean][] } {
  const table = new ReservationTable();
  const clock = { now: 0 };
  const changes: [string, boolean][] = [];
  const loads = new WorkerLoads(table, 300, { now: () => clock.now, onChange: (origin, reporting) => changes.push([origin, reporting]) });
  return { table, loads, clock, changes };
}

describe("WorkerLoads", () => {
  test("without a report a worker's load is the proxy's own count", () => {
    const { table, loads } = setup();
    table.reserve(1n, "generation", W);
    expect(loads.load("generation", W)).toBe(1);
    expect(loads.waiting(W)).toBeUndefined();
  });

  test("a report counts every replica's requests, and what this proxy placed or finished since is added to it", () => {
    const { table, loads } = setup();
    const mine = table.reserve(1n, "generation", W);
    loads.record(W, { running: 6, waiting: 4, kvUtilization: undefined });
    expect(loads.load("generation", W)).toBe(10);
    const more = table.reserve(2n, "generation", W);
    expect(loads.load("generation", W)).toBe(11);
    mine.release();
    more.release();
    expect(loads.load("generation", W)).toBe(9);
  });

  test("the blend is never below the proxy's own count (the report may predate its requests' arrival)", () => {
    const { table, loads } = setup();
    for (let key = 0n; key < 5n; key++) table.reserve(key, "context", W);
    loads.record(W, { running: 0, waiting: 0, kvUtilization: undefined });
    expect(loads.load("context", W)).toBe(5);
  });

  test("a stale report, or a worker that stops reporting, falls back to the proxy's own count, told once per change", () => {
    const { loads, clock, changes } = setup();
    loads.record(W, { running: 8, waiting: 0, kvUtilization: undefined });
    clock.now = 300;
    loads.expire();
    expect(loads.load("generation", W)).toBe(8);
    clock.now = 301;
    loads.expire();
    expect(loads.load("generation", W)).toBe(0);
    loads.record(W, { running: 8, waiting: 0, kvUtilization: undefined });
    expect(loads.load("generation", W)).toBe(8);
    loads.record(W, undefined);
    loads.record(W, undefined);
    expect(loads.load("generation", W)).toBe(0);
    loads.record(W, { running: 1, waiting: 0, kvUtilization: undefined });
    expect(changes).toEqual([
      [W, true],
      [W, false],
      [W, true],
    ]);
  });

  test("workers no longer listed are forgotten", () => {
    const { loads } = setup();
    loads.record(W, { running: 8, waiting: 3, kvUtilization: undefined });
    loads.retain(new Set());
    expect(loads.report(W)).toBeUndefined();
  });
});
