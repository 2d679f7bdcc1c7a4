import { SlotHistograms } from "./latency-histogram.ts";
import { SlotCounts } from "./slot-counts.ts";

/** Rates over the last 10 s; shares and percentiles over the last minute. */
export const RATE_WINDOW_S = 10;
export const MINUTE_MS = 60_000;
const LATENCY_SLOT_MS = 5000;

export interface WorkerFigures {
  /** Attempts sent to it per second, over the last 10 s. */
  readonly perSecond: number;
  /** Failed attempts / finished attempts over the last minute; undefined when none finished. */
  readonly errorShare: number | undefined;
  readonly ttftP50Ms: number | undefined;
  readonly ttftP99Ms: number | undefined;
  readonly durationP50Ms: number | undefined;
  readonly durationP99Ms: number | undefined;
}

/** One worker's attempts and latencies over the last minute (about 10 KB, fixed). */
export class WorkerStats {
  readonly #attempts = new SlotCounts(60, 1000);
  readonly #failures = new SlotCounts(60, 1000);
  readonly #completed = new SlotCounts(60, 1000);
  readonly #ttft = new SlotHistograms(MINUTE_MS / LATENCY_SLOT_MS, LATENCY_SLOT_MS);
  readonly #duration = new SlotHistograms(MINUTE_MS / LATENCY_SLOT_MS, LATENCY_SLOT_MS);

  attempt(nowMs: number): void {
    this.#attempts.add(nowMs);
  }

  failed(nowMs: number): void {
    this.#failures.add(nowMs);
  }

  completed(nowMs: number, firstTokenMs: number, completeMs: number): void {
    this.#completed.add(nowMs);
    this.#ttft.record(nowMs, firstTokenMs);
    this.#duration.record(nowMs, completeMs);
  }

  figures(nowMs: number): WorkerFigures {
    // The second in progress is left out of the rate: it has only just begun.
    const perSecond = this.#attempts.sum(nowMs - 1000, RATE_WINDOW_S) / RATE_WINDOW_S;
    const failures = this.#failures.sum(nowMs);
    const finished = failures + this.#completed.sum(nowMs);
    const [ttftP50Ms, ttftP99Ms] = this.#ttft.quantiles(nowMs, [0.5, 0.99]);
    const [durationP50Ms, durationP99Ms] = this.#duration.quantiles(nowMs, [0.5, 0.99]);
    return { perSecond, errorShare: finished === 0 ? undefined : failures / finished, ttftP50Ms, ttftP99Ms, durationP50Ms, durationP99Ms };
  }
}
