import { describe, expect, test } from "bun:test";
import { SeriesRing, type SeriesPoint } from "./series-ring.ts";
import { perOutcome } from "./snapshot.ts";

function point(at: number, ok: number): SeriesPoint {
  return {
    at,
    outcomes: perOutcome((outcome) => (outcome === "ok" ? ok : 0)),
    inFlight: ok,
    ttftP50Ms: ok === 0 ? undefined : ok,
    ttftP99Ms: undefined,
  };
}

describe("SeriesRing", () => {
  test("keeps the newest points up to its capacity, oldest first", () => {
    const ring = new SeriesRing(3);
    for (let s = 1; s <= 5; s++) ring.push(point(s * 1000, s));
    const series = ring.columns();
    expect(series.at).toEqual([3000, 4000, 5000]);
    expect(series.outcomes.ok).toEqual([3, 4, 5]);
    expect(series.outcomes.timeout).toEqual([0, 0, 0]);
    expect(ring.length).toBe(3);
  });

  test("gives only the points after a time, for a page that has the rest", () => {
    const ring = new SeriesRing(10);
    for (let s = 1; s <= 4; s++) ring.push(point(s * 1000, s));
    expect(ring.columns(2000).at).toEqual([3000, 4000]);
  });

  test("a clock stepping back never repeats or reorders a point's time", () => {
    const ring = new SeriesRing(5);
    ring.push(point(5000, 1));
    ring.push(point(3000, 2));
    ring.push(point(5000, 3));
    expect(ring.columns().at).toEqual([5000, 5001, 5002]);
    expect(ring.columns(5001).outcomes.ok).toEqual([3]);
  });

  test("a second without a first token has a null percentile", () => {
    const ring = new SeriesRing(2);
    ring.push(point(1000, 0));
    ring.push(point(2000, 7));
    expect(ring.columns().ttftP50Ms).toEqual([null, 7]);
  });
});
