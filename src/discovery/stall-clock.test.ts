import { afterEach, describe, expect, test } from "bun:test";
import { SAMPLE_MS, STALL_MS, StallClock } from "./stall-clock.ts";

function fakeTime(): { now: () => number; advance(ms: number): void } {
  let now = 1000;
  return { now: () => now, advance: (ms) => void (now += ms) };
}

const started: StallClock[] = [];
afterEach(() => {
  for (const clock of started.splice(0)) clock.stop();
});

function startedClock(time: { now: () => number }, stalls: number[] = []): StallClock {
  const clock = new StallClock(time.now, (ms) => stalls.push(ms));
  clock.start();
  started.push(clock);
  return clock;
}

describe("StallClock", () => {
  test("a gap longer than the stall bound is left out, less the sampling period", () => {
    const time = fakeTime();
    const stalls: number[] = [];
    const clock = startedClock(time, stalls);
    const before = clock.now();
    time.advance(2500);
    expect(clock.now() - before).toBe(SAMPLE_MS);
    expect(stalls).toEqual([2500 - SAMPLE_MS]);
    expect(clock.stalledMs).toBe(2500 - SAMPLE_MS);
  });

  test("gaps within the stall bound are charged as time", () => {
    const time = fakeTime();
    const stalls: number[] = [];
    const clock = startedClock(time, stalls);
    const before = clock.now();
    for (let i = 0; i < 10; i++) {
      time.advance(STALL_MS);
      clock.now();
    }
    expect(clock.now() - before).toBe(10 * STALL_MS);
    expect(stalls).toEqual([]);
  });

  test("two stalls in a row, the first settled by a read, are both left out", () => {
    const time = fakeTime();
    const stalls: number[] = [];
    const clock = startedClock(time, stalls);
    const before = clock.now();
    time.advance(2500);
    clock.now();
    time.advance(2500);
    expect(clock.now() - before).toBe(2 * SAMPLE_MS);
    expect(stalls).toHaveLength(2);
  });

  test("a clock not started finds no stall", () => {
    const time = fakeTime();
    const clock = new StallClock(time.now);
    const before = clock.now();
    time.advance(5000);
    expect(clock.now() - before).toBe(5000);
    expect(clock.stalledMs).toBe(0);
  });
});
