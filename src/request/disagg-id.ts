/**
 * disagg_request_id allocation, as trtllm-serve does it (reference §2.3): a 64-bit
 * snowflake with top bit 0 — monotonic ms (39 bits) | node id (8) | process id (6) |
 * counter (10) — mapped into [2^40, 2^63 − 1) so it never collides with a worker's local ids.
 */

const MASK_39 = (1n << 39n) - 1n;
const ID_FLOOR = 1n << 40n;
const ID_SPAN = (1n << 63n) - 1n - ID_FLOOR;

export class DisaggIdAllocator {
  readonly #nodeId: bigint;
  readonly #processId: bigint;
  readonly #now: () => number;
  #counter = 0n;

  constructor(nodeId: number, options: { processId?: number; now?: () => number } = {}) {
    if (!Number.isInteger(nodeId) || nodeId < 0 || nodeId > 255) {
      throw new RangeError(`Cannot allocate ids: node id ${nodeId} is outside 0..255`);
    }
    this.#nodeId = BigInt(nodeId);
    this.#processId = BigInt(options.processId ?? 0);
    this.#now = options.now ?? (() => performance.timeOrigin + performance.now());
  }

  next(): bigint {
    const ms = BigInt(Math.floor(this.#now())) & MASK_39;
    this.#counter = (this.#counter + 1n) & 1023n;
    const raw = (ms << 24n) | (this.#nodeId << 16n) | ((this.#processId & 63n) << 10n) | this.#counter;
    return (raw % ID_SPAN) + ID_FLOOR;
  }
}
