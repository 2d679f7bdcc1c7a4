import type { Outcome } from "../errors.ts";
import { OUTCOMES, perOutcome, type Series } from "./snapshot.ts";

/** One second of traffic, as the charts draw it. */
export interface SeriesPoint {
  readonly at: number;
  readonly outcomes: Readonly<Record<Outcome, number>>;
  readonly inFlight: number;
  readonly ttftP50Ms: number | undefined;
  readonly ttftP99Ms: number | undefined;
}

/** The last `capacity` points in preallocated columns: memory fixed whatever the uptime. */
export class SeriesRing {
  readonly #capacity: number;
  readonly #at: Float64Array;
  readonly #outcomes: Record<Outcome, Float64Array>;
  readonly #inFlight: Float64Array;
  readonly #p50: Float64Array;
  readonly #p99: Float64Array;
  /** Points written so far (the newest is at (written - 1) % capacity). */
  #written = 0;

  constructor(capacity: number) {
    this.#capacity = capacity;
    this.#at = new Float64Array(capacity);
    this.#outcomes = perOutcome(() => new Float64Array(capacity));
    this.#inFlight = new Float64Array(capacity);
    this.#p50 = new Float64Array(capacity);
    this.#p99 = new Float64Array(capacity);
  }

  /** Times only increase (a clock stepping back is held at the last point + 1 ms): pages ask for points after the last they have. */
  push(point: SeriesPoint): void {
    const i = this.#written % this.#capacity;
    const last = this.#written === 0 ? Number.NEGATIVE_INFINITY : this.#at[(this.#written - 1) % this.#capacity]!;
    this.#at[i] = Math.max(point.at, last + 1);
    for (const outcome of OUTCOMES) this.#outcomes[outcome][i] = point.outcomes[outcome];
    this.#inFlight[i] = point.inFlight;
    this.#p50[i] = point.ttftP50Ms ?? Number.NaN;
    this.#p99[i] = point.ttftP99Ms ?? Number.NaN;
    this.#written++;
  }

  get length(): number {
    return Math.min(this.#written, this.#capacity);
  }

  /** The points taken after `afterAt` (all kept points when undefined), oldest first. */
  columns(afterAt?: number): Series {
    const indexes: number[] = [];
    for (let n = this.length; n >= 1; n--) {
      const i = (this.#written - n) % this.#capacity;
      if (afterAt === undefined || this.#at[i]! > afterAt) indexes.push(i);
    }
    const pick = (column: Float64Array): number[] => indexes.map((i) => column[i]!);
    const orNull = (column: Float64Array): (number | null)[] => indexes.map((i) => (Number.isNaN(column[i]!) ? null : column[i]!));
    const outcomes = perOutcome((outcome) => pick(this.#outcomes[outcome]));
    return { at: pick(this.#at), outcomes, inFlight: pick(this.#inFlight), ttftP50Ms: orNull(this.#p50), ttftP99Ms: orNull(this.#p99) };
  }
}
