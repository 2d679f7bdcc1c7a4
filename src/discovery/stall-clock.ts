/**
 * A clock that does not run while its own event loop could not: monotonic time less every stall
 * found. Started, it looks at the time every SAMPLE_MS; a gap of more than STALL_MS between two
 * looks (a paused process, a long GC, a blocked loop) is a stall, and what ran over the sampling
 * period is left out. Every read looks too, so a request queued behind a stall, or a stall right
 * after another, settles it before it reads. Upstream's fix for the same bug: nvbugs/6786712,
 * the outage tests of tests/unittest/disaggregated/test_cluster_storage.py.
 */

export const SAMPLE_MS = 100;
export const STALL_MS = 500;

export class StallClock {
  readonly #now: () => number;
  readonly #onStall: ((stallMs: number) => void) | undefined;
  #sampler: ReturnType<typeof setInterval> | undefined;
  /** Monotonic ms of the last look; a stall is measured from it. */
  #lastLook = 0;
  #stalledMs = 0;

  constructor(now: () => number, onStall?: (stallMs: number) => void) {
    this.#now = now;
    this.#onStall = onStall;
  }

  /** Starts sampling; stalls are found only while started (idempotent). */
  start(): void {
    if (this.#sampler !== undefined) return;
    this.#lastLook = this.#now();
    this.#sampler = setInterval(() => this.now(), SAMPLE_MS);
  }

  stop(): void {
    if (this.#sampler !== undefined) clearInterval(this.#sampler);
    this.#sampler = undefined;
  }

  /** Milliseconds of stalls left out so far. */
  get stalledMs(): number {
    return this.#stalledMs;
  }

  /** Monotonic ms less every stall found, this look's included. */
  now(): number {
    const now = this.#now();
    if (this.#sampler !== undefined) {
      const gap = now - this.#lastLook;
      if (gap > STALL_MS) {
        const stall = gap - SAMPLE_MS;
        this.#stalledMs += stall;
        this.#onStall?.(stall);
      }
      this.#lastLook = now;
    }
    return now - this.#stalledMs;
  }
}
