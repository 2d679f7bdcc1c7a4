/**
 * Counts per time slot over a sliding window of `slots` slots of `slotMs` each: O(1) to add,
 * memory fixed at construction whatever the uptime. Slots the clock skipped read as zero; a
 * clock that steps back counts into the newest slot.
 */
export class SlotCounts {
  readonly #counts: Float64Array;
  readonly #slotMs: number;
  /** Absolute index (time / slotMs) of the newest slot written, -1 before the first. */
  #newest = -1;

  constructor(slots: number, slotMs: number) {
    this.#counts = new Float64Array(slots);
    this.#slotMs = slotMs;
  }

  add(nowMs: number, amount = 1): void {
    const slot = this.#advance(nowMs);
    this.#counts[slot % this.#counts.length]! += amount;
  }

  /** The sum of the `slots` slots ending with the one `endMs` falls in (at most the window). */
  sum(endMs: number, slots: number = this.#counts.length): number {
    const end = Math.floor(endMs / this.#slotMs);
    const length = this.#counts.length;
    let total = 0;
    for (
      let slot = Math.max(end - Math.min(slots, length) + 1, this.#newest - length + 1, 0);
      slot <= Math.min(end, this.#newest);
      slot++
    ) {
      total += this.#counts[slot % length]!;
    }
    return total;
  }

  /** Zeroes the slots between the newest written and now's; returns now's absolute slot. */
  #advance(nowMs: number): number {
    const slot = Math.floor(nowMs / this.#slotMs);
    if (slot <= this.#newest) return this.#newest;
    const length = this.#counts.length;
    const from = Math.max(this.#newest + 1, slot - length + 1);
    for (let s = from; s <= slot; s++) this.#counts[s % length] = 0;
    this.#newest = slot;
    return slot;
  }
}
