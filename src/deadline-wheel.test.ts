import { describe, expect, test } from "bun:test";
import { DeadlineWheel } from "./deadline-wheel.ts";

/** Resolves with the time `fire` ran. */
function fired(wheel: DeadlineWheel, ms: number, now: () => number = () => performance.now()): Promise<number> {
  return new Promise((resolve) => wheel.schedule(ms, () => resolve(now())));
}

describe("DeadlineWheel", () => {
  test("a deadline fires once, never before its time, and the wheel is idle after", async () => {
    const wheel = new DeadlineWheel(5);
    const start = performance.now();
    let count = 0;
    const clear = wheel.schedule(20, () => count++);
    const at = await fired(wheel, 30);
    expect(at - start).toBeGreaterThanOrEqual(30);
    expect(count).toBe(1);
    // Cleared after it fired, as a call that failed by it clears its deadline: nothing is counted twice.
    clear();
    expect(wheel.pending).toBe(0);
    expect(await fired(wheel, 10)).toBeGreaterThan(at);
    expect(wheel.pending).toBe(0);
  });

  test("a filed target is told once, never before its time; an unfiled one never, and unfiling twice is harmless", async () => {
    const wheel = new DeadlineWheel(5);
    const start = performance.now();
    const told = Promise.withResolvers<number>();
    let count = 0;
    const target = { deadlinePassed: () => told.resolve(performance.now()) };
    const dropped = { deadlinePassed: () => count++ };
    wheel.file(20, target);
    const slot = wheel.file(10, dropped);
    wheel.unfile(slot, dropped);
    wheel.unfile(slot, dropped);
    expect(await told.promise).toBeGreaterThanOrEqual(start + 20);
    await fired(wheel, 10);
    expect(count).toBe(0);
    expect(wheel.pending).toBe(0);
  });

  test("a cleared deadline never fires, and clearing twice is harmless", async () => {
    const wheel = new DeadlineWheel(5);
    let count = 0;
    const clear = wheel.schedule(10, () => count++);
    clear();
    clear();
    expect(wheel.pending).toBe(0);
    await fired(wheel, 30);
    expect(count).toBe(0);
  });

  test("after a long stall it fires what is due without walking every slot it missed", async () => {
    let clock = 0;
    const wheel = new DeadlineWheel(5, () => clock);
    const due = fired(wheel, 100, () => clock);
    let later = 0;
    const clearLater = wheel.schedule(2e9, () => later++);
    clock = 1e9;
    expect(await due).toBe(1e9);
    expect(later).toBe(0);
    expect(wheel.pending).toBe(1);
    clearLater();
    expect(wheel.pending).toBe(0);
  });
});
