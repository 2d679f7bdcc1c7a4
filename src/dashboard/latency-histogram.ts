/**
 * Latencies over a sliding window, as counts in logarithmic buckets per time slot: O(1) to
 * record, fixed memory, percentiles within one bucket's width (a quarter octave, ±9% around the
 * reported midpoint). Buckets run from 0.1 ms to about 28 min; slower values land in the last.
 */

const FLOOR_MS = 0.1;
const PER_OCTAVE = 4;
const BUCKETS = 96;
const LOG_STEP = Math.log(2) / PER_OCTAVE;

/** The bucket a latency falls in: 0 below the floor, then one per quarter octave. */
export function bucketOf(ms: number): number {
  if (!(ms > FLOOR_MS)) return 0;
  return Math.min(BUCKETS - 1, 1 + Math.floor(Math.log(ms / FLOOR_MS) / LOG_STEP));
}

/** A bucket's geometric midpoint, the value a percentile in it is reported as (to 0.01 ms: finer would be noise). */
export function midpointOf(bucket: number): number {
  if (bucket === 0) return FLOOR_MS;
  return Math.round(FLOOR_MS * Math.exp((bucket - 0.5) * LOG_STEP) * 100) / 100;
}

export class SlotHistograms {
  readonly #counts: Uint32Array;
  readonly #slots: number;
  readonly #slotMs: number;
  #newest = -1;

  constructor(slots: number, slotMs: number) {
    this.#counts = new Uint32Array(slots * BUCKETS);
    this.#slots = slots;
    this.#slotMs = slotMs;
  }

  record(nowMs: number, latencyMs: number): void {
    if (!Number.isFinite(latencyMs)) return;
    const slot = this.#advance(nowMs);
    this.#counts[(slot % this.#slots) * BUCKETS + bucketOf(latencyMs)]!++;
  }

  /** Zeroes every slot (a per-second histogram read once a second). */
  clear(): void {
    this.#counts.fill(0);
  }

  /** The latencies at quantiles `qs` (0..1) over the whole window ending at `nowMs`; undefined when none was recorded. */
  quantiles(nowMs: number, qs: readonly number[]): (number | undefined)[] {
    const merged = new Float64Array(BUCKETS);
    const nowSlot = Math.floor(nowMs / this.#slotMs);
    let total = 0;
    for (let slot = Math.max(nowSlot - this.#slots + 1, 0); slot <= Math.min(nowSlot, this.#newest); slot++) {
      const base = (slot % this.#slots) * BUCKETS;
      for (let b = 0; b < BUCKETS; b++) {
        const n = this.#counts[base + b]!;
        merged[b]! += n;
        total += n;
      }
    }
    return qs.map((q) => {
      if (total === 0) return undefined;
      // The smallest bucket holding at least q of the observations (nearest-rank).
      const rank = Math.max(1, Math.ceil(q * total));
      let seen = 0;
      for (let b = 0; b < BUCKETS; b++) {
        seen += merged[b]!;
        if (seen >= rank) return midpointOf(b);
      }
      return midpointOf(BUCKETS - 1);
    });
  }

  #advance(nowMs: number): number {
    const slot = Math.floor(nowMs / this.#slotMs);
    if (slot <= this.#newest) return this.#newest;
    for (let s = Math.max(this.#newest + 1, slot - this.#slots + 1); s <= slot; s++) {
      const base = (s % this.#slots) * BUCKETS;
      this.#counts.fill(0, base, base + BUCKETS);
    }
    this.#newest = slot;
    return slot;
  }
}
