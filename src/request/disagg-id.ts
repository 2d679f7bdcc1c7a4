/**
 * disagg_request_id allocation, as trtllm-serve does it (reference §2.3): a 64-bit
 * snowflake with top bit 0 — monotonic ms (39 bits) | node id (8) | process id (6) |
 * counter (10) — mapped into [2^40, 2^63 − 1) so it never collides with a worker's local ids.
 */

const MASK_39 = (1n << 39n) - 1n;
const ID_FLOOR = 1n << 40n;
const ID_SPAN = (1n << 63n) - 1n - ID_FLOOR;
/** Every low part (node, process, counter) is below this. */
const LOW_SPAN = 1n << 24n;

export class DisaggIdAllocator {
  /** Node id and process id in their bits: (node << 16) | (process << 10). */
  readonly #nodeBits: number;
  readonly #now: () => number;
  #counter = 0;
  #stampedMs = Number.NaN;
  #stamp = 0n;
  /** The millisecond's first id, `stamp + ID_FLOOR`, when every id of the millisecond is below ID_SPAN (so `% ID_SPAN` keeps it). */
  #base: bigint | undefined;

  constructor(nodeId: number, options: { processId?: number; now?: () => number } = {}) {
    if (!Number.isInteger(nodeId) || nodeId < 0 || nodeId > 255) {
      throw new RangeError(`Cannot allocate ids: node id ${nodeId} is outside 0..255`);
    }
    this.#nodeBits = nodeId * 2 ** 16 + ((options.processId ?? 0) & 63) * 2 ** 10;
    this.#now = options.now ?? (() => performance.timeOrigin + performance.now());
  }

  next(): bigint {
    const ms = Math.floor(this.#now());
    // The millisecond's bits are shifted once per millisecond, not once per id (bigints are allocated).
    if (ms !== this.#stampedMs) {
      this.#stampedMs = ms;
      this.#stamp = (BigInt(ms) & MASK_39) << 24n;
      this.#base = this.#stamp + LOW_SPAN <= ID_SPAN ? this.#stamp + ID_FLOOR : undefined;
    }
    this.#counter = (this.#counter + 1) & 1023;
    // Below 2^24: node id, process id and counter add up exactly as a double.
    const low = this.#nodeBits + this.#counter;
    // stamp | low is stamp + low (the stamp's low 24 bits are 0): two bigints per id, not four.
    if (this.#base !== undefined) return this.#base + BigInt(low);
    const raw = this.#stamp | BigInt(low);
    return (raw % ID_SPAN) + ID_FLOOR;
  }
}
