/**
 * The deadlines of many calls on one timer: each is filed in a slot of `tickMs` and fires on the
 * first tick at or after it (never early, at most one tick late); a cleared one is dropped from
 * its slot. One repeating timer runs while any deadline is pending. A timer of its own per worker
 * call (set, then cleared when the answer came) cost ~6 % of a non-streamed request's CPU at 16
 * clients (bench/compare.ts, 0.943 ×): Bun makes and files a Timeout for each.
 */

export interface Deadlines {
  /** Runs `fire` once `ms` have passed; the returned function drops it (idempotent). */
  schedule(ms: number, fire: () => void): () => void;
}

/** What a deadline may tell instead of calling a closure: an object that lives on anyway (a stream's relay). */
export interface DeadlineTarget {
  deadlinePassed(): void;
}

/** Slot width: how late a deadline may fire, against how often the timer wakes while calls are out. */
const DEFAULT_TICK_MS = 10;

export class DeadlineWheel implements Deadlines {
  readonly #tickMs: number;
  readonly #slots = new Map<number, Set<(() => void) | DeadlineTarget>>();
  readonly #now: () => number;
  #pending = 0;
  /** The last slot whose deadlines were fired. */
  #done: number;
  #timer: Timer | undefined;

  constructor(tickMs = DEFAULT_TICK_MS, now: () => number = () => performance.now()) {
    this.#tickMs = tickMs;
    this.#now = now;
    this.#done = Math.floor(now() / tickMs);
  }

  /** Deadlines not yet fired or dropped. */
  get pending(): number {
    return this.#pending;
  }

  schedule(ms: number, fire: () => void): () => void {
    // Its own entry: the same function may be scheduled twice.
    const entry = (): void => fire();
    const slot = this.#add(ms, entry);
    return () => this.#drop(slot, entry);
  }

  /**
   * Tells `target` once `ms` have passed, with no closure made for it (a stream's deadline
   * lives as long as the stream); returns the slot `unfile` takes. Filed once at a time.
   */
  file(ms: number, target: DeadlineTarget): number {
    return this.#add(ms, target);
  }

  /** `target`, filed in `slot`, is not told (idempotent). */
  unfile(slot: number, target: DeadlineTarget): void {
    this.#drop(slot, target);
  }

  #add(ms: number, entry: (() => void) | DeadlineTarget): number {
    // Idle since the last tick: the slots between are empty, and none is fired for them.
    if (this.#timer === undefined) this.#done = Math.floor(this.#now() / this.#tickMs);
    // The first slot that starts at or after the deadline: never early.
    const slot = Math.max(Math.ceil((this.#now() + Math.max(0, ms)) / this.#tickMs), this.#done + 1);
    let entries = this.#slots.get(slot);
    if (entries === undefined) {
      entries = new Set();
      this.#slots.set(slot, entries);
    }
    if (entries.has(entry)) return slot;
    entries.add(entry);
    this.#pending++;
    if (this.#timer === undefined) {
      this.#timer = setInterval(() => this.#tick(), this.#tickMs);
      // The calls it bounds keep the process up; the wheel alone does not.
      this.#timer.unref();
    }
    return slot;
  }

  #drop(slot: number, entry: (() => void) | DeadlineTarget): void {
    const entries = this.#slots.get(slot);
    if (entries === undefined || !entries.delete(entry)) return;
    this.#pending--;
    if (entries.size === 0) this.#slots.delete(slot);
    this.#stopWhenIdle();
  }

  #tick(): void {
    const now = Math.floor(this.#now() / this.#tickMs);
    // After a long stall of the event loop, the filed slots are fewer than the slots passed.
    const due = now - this.#done > this.#slots.size ? [...this.#slots.keys()].filter((slot) => slot <= now) : [];
    if (due.length === 0) for (let slot = this.#done + 1; slot <= now; slot++) due.push(slot);
    this.#done = now;
    for (const slot of due) {
      const entries = this.#slots.get(slot);
      if (entries === undefined) continue;
      this.#slots.delete(slot);
      this.#pending -= entries.size;
      // Emptied first: a deadline cleared after it fired (its call then fails) is not counted twice.
      const fires = [...entries];
      entries.clear();
      for (const fire of fires) {
        if (typeof fire === "function") fire();
        else fire.deadlinePassed();
      }
    }
    this.#stopWhenIdle();
  }

  #stopWhenIdle(): void {
    if (this.#pending > 0 || this.#timer === undefined) return;
    clearInterval(this.#timer);
    this.#timer = undefined;
  }
}
