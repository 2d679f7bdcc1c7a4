import { describe, expect, test } from "bun:test";
import { bucketOf, midpointOf, SlotHistograms } from "./latency-histogram.ts";

describe("latency buckets", () => {
  test("a value's bucket midpoint is within a tenth of the value", () => {
    for (const ms of [0.2, 1, 3.7, 42, 250, 1234, 60_000, 900_000]) {
      expect(Math.abs(midpointOf(bucketOf(ms)) - ms) / ms).toBeLessThan(0.1);
    }
  });

  test("values below the floor and non-numbers share the first bucket", () => {
    expect(bucketOf(0)).toBe(0);
    expect(bucketOf(-5)).toBe(0);
    expect(bucketOf(Number.NaN)).toBe(0);
  });
});

describe("SlotHistograms", () => {
  test("p50 and p99 of a known spread land near the true percentiles", () => {
    const histograms = new SlotHistograms(12, 5000);
    for (let i = 1; i <= 1000; i++) histograms.record(1000 + i, i);
    const [p50, p99] = histograms.quantiles(2000, [0.5, 0.99]);
    expect(Math.abs(p50! - 500) / 500).toBeLessThan(0.1);
    expect(Math.abs(p99! - 990) / 990).toBeLessThan(0.1);
  });

  test("observations older than the window no longer count", () => {
    const histograms = new SlotHistograms(12, 5000);
    histograms.record(0, 1000);
    histograms.record(59_000, 10);
    expect(histograms.quantiles(59_000, [0.99])[0]).toBeGreaterThan(500);
    histograms.record(61_000, 10);
    expect(histograms.quantiles(61_000, [0.99])[0]).toBeLessThan(20);
  });

  test("no observation gives no percentile", () => {
    expect(new SlotHistograms(12, 5000).quantiles(0, [0.5])).toEqual([undefined]);
  });

  test("clear forgets everything", () => {
    const histograms = new SlotHistograms(1, 1000);
    histograms.record(0, 5);
    histograms.clear();
    expect(histograms.quantiles(0, [0.5])).toEqual([undefined]);
  });
});
