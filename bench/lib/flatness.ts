/**
 * Is a sampled series flat? After the warm-up, the median of the last third of the samples
 * is compared with the median of the first third (medians, so one GC cycle or one burst of
 * in-flight requests does not decide), and the least-squares slope is reported alongside.
 */

import { median, slope } from "./stats.ts";

export interface Flatness {
  /** Median of the last third minus median of the first third (after warm-up). */
  readonly growth: number;
  /** Least-squares slope per minute over the steady samples. */
  readonly slopePerMinute: number;
  readonly steadySamples: number;
  readonly flat: boolean;
}

export function flatness(timesS: readonly number[], values: readonly number[], warmupS: number, tolerance: number): Flatness {
  const steady = timesS.flatMap((t, i) => (t >= warmupS ? [{ t, v: values[i] ?? 0 }] : []));
  const third = Math.max(1, Math.floor(steady.length / 3));
  const first = steady.slice(0, third).map((s) => s.v);
  const last = steady.slice(-third).map((s) => s.v);
  const growth = steady.length < 2 ? 0 : median(last) - median(first);
  const slopePerMinute = slope(
    steady.map((s) => s.t / 60),
    steady.map((s) => s.v),
  );
  return { growth, slopePerMinute, steadySamples: steady.length, flat: steady.length >= 2 && growth <= tolerance };
}
