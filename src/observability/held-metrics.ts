/**
 * Counts and observations held as plain numbers between scrapes, then handed to their
 * prom-client family in one go (at the scrape, or as a buffer fills). prom-client hashes the
 * labels and allocates on every call; a request makes about fifteen such calls, which held
 * here cost a few array writes each (issue #37). A scrape sees every value held until then.
 */

import type { Counter, Histogram } from "prom-client";

/** Values a scrape hands on first. */
export interface Held {
  flush(): void;
}

/** Observations held before a histogram takes them all (bounds what waits for a scrape). */
const HELD_OBSERVATIONS = 256;

/** A count held for one counter and label set; `add` hands it on. */
export class HeldCount implements Held {
  #count = 0;
  readonly #add: (count: number) => void;

  constructor(add: (count: number) => void) {
    this.#add = add;
  }

  inc(): void {
    this.#count += 1;
  }

  flush(): void {
    if (this.#count === 0) return;
    const count = this.#count;
    this.#count = 0;
    this.#add(count);
  }
}

/** A counter's held counts. */
export function heldCount(counter: Counter): HeldCount {
  return new HeldCount((count) => counter.inc(count));
}

/**
 * A counter of one or two labels, its counts held by label values. Handed on in the order each
 * label set first came, as prom-client would have listed them.
 */
export class HeldCounts<L extends string> implements Held {
  readonly #counter: Counter<L>;
  readonly #first: L;
  readonly #second: L | undefined;
  readonly #counts = new Map<string, Map<string, HeldCount>>();
  readonly #order: HeldCount[] = [];

  constructor(counter: Counter<L>, first: L, second?: L) {
    this.#counter = counter;
    this.#first = first;
    this.#second = second;
  }

  /** One more under these label values (`second` only for a counter of two labels). */
  inc(first: string, second = ""): void {
    let inner = this.#counts.get(first);
    if (inner === undefined) {
      inner = new Map();
      this.#counts.set(first, inner);
    }
    let count = inner.get(second);
    if (count === undefined) {
      count = this.#countOf(first, second);
      inner.set(second, count);
      this.#order.push(count);
    }
    count.inc();
  }

  #countOf(first: string, second: string): HeldCount {
    const labels: Partial<Record<L, string>> = {};
    labels[this.#first] = first;
    if (this.#second !== undefined) labels[this.#second] = second;
    return new HeldCount((count) => this.#counter.inc(labels, count));
  }

  flush(): void {
    for (const count of this.#order) count.flush();
  }
}

/** A histogram's observations (of one label set), held until a scrape or HELD_OBSERVATIONS of them. */
export class HeldObservations implements Held {
  readonly #values = new Float64Array(HELD_OBSERVATIONS);
  #length = 0;
  readonly #observe: (value: number) => void;

  constructor(observe: (value: number) => void) {
    this.#observe = observe;
  }

  /** `value` must be finite (prom-client refuses others, and would only say so at the scrape). */
  observe(value: number): void {
    this.#values[this.#length] = value;
    this.#length += 1;
    if (this.#length === HELD_OBSERVATIONS) this.flush();
  }

  flush(): void {
    const length = this.#length;
    this.#length = 0;
    for (const value of this.#values.subarray(0, length)) this.#observe(value);
  }
}

/** A histogram's held observations. */
export function heldObservations(histogram: Histogram): HeldObservations {
  return new HeldObservations((value) => histogram.observe(value));
}

/** A histogram of one label, its observations held by that label's value, handed on in the order each value first came. */
export class HeldObservationsBy<L extends string> implements Held {
  readonly #histogram: Histogram<L>;
  readonly #label: L;
  readonly #held = new Map<string, HeldObservations>();

  constructor(histogram: Histogram<L>, label: L) {
    this.#histogram = histogram;
    this.#label = label;
  }

  observe(value: string, observed: number): void {
    let held = this.#held.get(value);
    if (held === undefined) {
      const labels: Partial<Record<L, string>> = {};
      labels[this.#label] = value;
      held = new HeldObservations((seconds) => this.#histogram.observe(labels, seconds));
      this.#held.set(value, held);
    }
    held.observe(observed);
  }

  flush(): void {
    for (const held of this.#held.values()) held.flush();
  }
}
