import { describe, expect, test } from "bun:test";
import { flatness } from "../lib/flatness.ts";
import { percentile, summarize } from "../lib/stats.ts";
import { lineChart } from "./svg-chart.ts";

describe("lineChart", () => {
  test("draws every series as a path with its points, and escapes text", () => {
    const svg = lineChart({
      title: "a < b & c",
      xLabel: "x",
      yLabel: "y",
      xScale: "log2",
      series: [
        {
          name: "one",
          color: "#111",
          points: [
            [1, 1],
            [16, 2],
            [64, 3],
          ],
        },
        {
          name: "two",
          color: "#222",
          points: [
            [1, 2],
            [16, Number.NaN],
            [64, 1],
          ],
          dashed: true,
        },
      ],
      reference: { y: 2.5, label: "target" },
    });
    expect(svg.startsWith("<svg")).toBe(true);
    expect(svg).toContain("a &lt; b &amp; c");
    expect(svg.match(/<path /g)).toHaveLength(2);
    expect(svg.match(/<circle /g)).toHaveLength(5);
    expect(svg).not.toContain("NaN");
  });
});

describe("stats", () => {
  test("nearest-rank percentiles", () => {
    const sorted = Float64Array.from({ length: 100 }, (_, i) => i + 1);
    expect(percentile(sorted, 50)).toBe(50);
    expect(percentile(sorted, 99)).toBe(99);
    expect(summarize([3, 1, 2]).max).toBe(3);
  });

  test("a series that keeps growing after warm-up is not flat; one that settles is", () => {
    const times = Array.from({ length: 30 }, (_, i) => i * 10);
    const settles = times.map((t) => (t < 60 ? t : 60) + (t % 20 === 0 ? 1 : 0));
    const grows = times.map((t) => t);
    expect(flatness(times, settles, 60, 5).flat).toBe(true);
    expect(flatness(times, grows, 60, 5).flat).toBe(false);
  });
});
