/**
 * A worker's side of per-request perf metrics: its steady clock (with an optional simulated
 * skew, and the offset the proxy sets through POST /steady_clock_offset), its engine iteration
 * counter, and the records GET /perf_metrics hands over once (at most perfMetricsMaxRequests,
 * 0 keeping none, as trtllm-serve's default).
 */

import type { JsonObject } from "../../json/json.ts";

/**
 * The worker's steady clock in seconds: monotonic, from the wall clock at process start (real
 * workers count from boot; the proxy's clock sync measures the difference either way).
 */
export function steadySeconds(): number {
  return (performance.timeOrigin + performance.now()) / 1000;
}

export interface WorkerPerfOptions {
  /** Seconds added to this worker's steady clock, as if it ran on another host (default 0). */
  readonly clockSkewS?: number;
  readonly perfMetricsMaxRequests?: number;
}

export class WorkerPerfState {
  /** The disagg server's offset (seconds), added to every timestamp the worker reports. */
  offset = 0;
  readonly #skew: number;
  readonly #max: number;
  #records: JsonObject[] = [];
  #iteration = 0;

  constructor(options: WorkerPerfOptions) {
    this.#skew = options.clockSkewS ?? 0;
    this.#max = options.perfMetricsMaxRequests ?? 0;
  }

  /** The worker's own steady clock (what /steady_clock_offset answers). */
  localNow(): number {
    return steadySeconds() + this.#skew;
  }

  /** The clock of reported metrics: the local one, adjusted by the proxy's offset. */
  now(): number {
    return this.localNow() + this.offset;
  }

  /** The iteration counter, unchanged (GET /metrics reports it). */
  iteration(): number {
    return this.#iteration;
  }

  nextIteration(): number {
    return this.#iteration++;
  }

  /** Keeps a finished request's record for /perf_metrics, the oldest dropped beyond the cap. */
  keep(record: JsonObject): void {
    if (this.#max <= 0) return;
    this.#records.push(record);
    if (this.#records.length > this.#max) this.#records.splice(0, this.#records.length - this.#max);
  }

  /** Every kept record, handed over once. */
  take(): JsonObject[] {
    const records = this.#records;
    this.#records = [];
    return records;
  }
}
