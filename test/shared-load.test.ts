import { describe, expect, test } from "bun:test";
import { Worker } from "node:worker_threads";
import { ReservationTable } from "../src/routing/reservations.ts";
import { SharedLoad } from "../src/routing/shared-load.ts";
import type { LoopInput, LoopReport } from "./support/placing-loop.ts";

const LOOPS = 4;
const REQUESTS = 1000;

interface Run {
  readonly reports: LoopReport[];
  readonly table: ReservationTable;
  release(): Promise<void>;
}

/** Four event loops (Bun Workers) on one shared load, released together, each placing a quarter of 1,000 requests. */
async function placeOverLoops(input: Omit<LoopInput, "buffer" | "barrier" | "requests">): Promise<Run> {
  const shared = new SharedLoad();
  const barrier = new SharedArrayBuffer(8);
  const gate = new Int32Array(barrier);
  const workerData: LoopInput = { ...input, buffer: shared.buffer, barrier, requests: REQUESTS / LOOPS };
  const loops = Array.from({ length: LOOPS }, () => new Worker(new URL("./support/placing-loop.ts", import.meta.url), { workerData }));
  const reports = loops.map((loop) => new Promise<LoopReport>((resolve) => loop.once("message", resolve)));
  // Every loop at the barrier, then all go at once.
  while (Atomics.load(gate, 1) < LOOPS) await Bun.sleep(1);
  Atomics.store(gate, 0, 1);
  Atomics.notify(gate, 0);
  const done = await Promise.all(reports);
  return {
    reports: done,
    table: new ReservationTable(new SharedLoad(shared.buffer)),
    async release() {
      await Promise.all(
        loops.map(
          (loop) =>
            new Promise<void>((resolve) => {
              loop.once("message", () => resolve());
              // oxlint-disable-next-line unicorn/require-post-message-target-origin -- a worker thread's port, not a window: no origin
              loop.postMessage("release");
            }),
        ),
      );
      await Promise.all(loops.map((loop) => loop.terminate()));
    },
  };
}

function totals(reports: readonly LoopReport[]): Record<string, number> {
  const sum: Record<string, number> = {};
  for (const report of reports) for (const [origin, n] of Object.entries(report.placed)) sum[origin] = (sum[origin] ?? 0) + n;
  return sum;
}

describe("num_workers: one load view shared by every event loop", () => {
  const generation = ["http://g:1", "http://g:2", "http://g:3", "http://g:4", "http://g:5"];

  test("1,000 requests placed by 4 loops at once fill every worker exactly to its in-flight limit and never past it", async () => {
    const run = await placeOverLoops({ limit: 37, generation, router: "load_balancing" });
    const placed = totals(run.reports);
    expect(placed).toEqual(Object.fromEntries(generation.map((origin) => [origin, 37])));
    expect(run.reports.reduce((n, r) => n + r.refused, 0)).toBe(REQUESTS - 5 * 37);
    for (const report of run.reports) expect(report.maxSeen).toBeLessThanOrEqual(37);
    expect(run.table.active()).toBe(5 * 37);
    for (const origin of generation) expect(run.table.load("generation", origin)).toBe(37);
    await run.release();
    expect(run.table.active()).toBe(0);
    expect(run.table.snapshot()).toEqual({});
  });

  test("round_robin over 4 loops takes turns from one sequence: 1,000 requests spread 200 to each of 5 workers", async () => {
    const run = await placeOverLoops({ limit: 0, generation, router: "round_robin" });
    expect(totals(run.reports)).toEqual(Object.fromEntries(generation.map((origin) => [origin, 200])));
    await run.release();
    expect(run.table.active()).toBe(0);
  });

  test("load_balancing over 4 loops reads the load the others placed: no worker ends more than one request per loop ahead of another", async () => {
    const run = await placeOverLoops({ limit: 0, generation, router: "load_balancing" });
    const counts = Object.values(totals(run.reports));
    expect(counts.reduce((a, b) => a + b, 0)).toBe(REQUESTS);
    // Each pick reads the shared load and reserves at once; a loop that read a stale minimum can put at most one more per other loop in flight.
    expect(Math.max(...counts) - Math.min(...counts)).toBeLessThanOrEqual(LOOPS);
    await run.release();
  });

  test("a worker seen first by another loop is found by its key, and weights add across loops", () => {
    const shared = new SharedLoad();
    const a = new ReservationTable(shared);
    const b = new ReservationTable(new SharedLoad(shared.buffer));
    const one = a.reserve(1n, "context", "http://w:1", 100);
    const two = b.reserve(2n, "context", "http://w:1", 50);
    expect(b.load("context", "http://w:1")).toBe(2);
    expect(a.weight("context", "http://w:1")).toBe(150);
    expect(a.load("generation", "http://w:1")).toBe(0);
    expect(b.snapshot()).toEqual({ "context http://w:1": 2 });
    one.release();
    one.release();
    two.release();
    expect(a.active()).toBe(0);
    expect(a.weight("context", "http://w:1")).toBe(0);
  });
});
