import { describe, expect, test } from "bun:test";
import { SlotCounts } from "./slot-counts.ts";

describe("SlotCounts", () => {
  test("sums what was added within the window and forgets what slid out of it", () => {
    const counts = new SlotCounts(10, 1000);
    counts.add(500);
    counts.add(1500, 2);
    counts.add(9_500, 3);
    expect(counts.sum(9_999)).toBe(6);
    expect(counts.sum(9_999, 1)).toBe(3);
    counts.add(10_200);
    // Slot 0 slid out; slots 1 and 9 and 10 remain.
    expect(counts.sum(10_999)).toBe(6);
    expect(counts.sum(30_000)).toBe(0);
  });

  test("a long silence clears every slot, not only the next one", () => {
    const counts = new SlotCounts(5, 1000);
    for (let t = 0; t < 5000; t += 1000) counts.add(t, 10);
    counts.add(1_000_000);
    expect(counts.sum(1_000_000)).toBe(1);
  });

  test("a clock stepping back counts into the newest slot", () => {
    const counts = new SlotCounts(5, 1000);
    counts.add(4000);
    counts.add(1000);
    expect(counts.sum(4000, 1)).toBe(2);
  });

  test("a window ending before the newest slot leaves the later slots out", () => {
    const counts = new SlotCounts(10, 1000);
    counts.add(1000);
    counts.add(5000, 4);
    expect(counts.sum(3000)).toBe(1);
  });
});
