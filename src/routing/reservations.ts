import type { Role } from "../config/types.ts";
import type { SharedLoad } from "./shared-load.ts";

/**
 * The one table of in-flight load. Each request holds reservations on the workers its legs
 * use; a reservation is released exactly once, whatever ends the request, so the counts (and
 * content weights) the load-aware routers read can never drift. With `num_workers` > 1 the
 * counts live in memory every event loop shares (`SharedLoad`), so they are the process's.
 */
export class ReservationTable {
  readonly #counts: LoadCounts<unknown>;

  constructor(shared?: SharedLoad) {
    this.#counts = shared === undefined ? new LocalCounts() : new SharedCounts(shared);
  }

  /**
   * Reserves `origin` in `role` for the request keyed by `requestKey`; `weight` (estimated
   * prompt tokens, default 0) counts towards the worker's content weight until the release.
   */
  reserve(requestKey: bigint, role: Role, origin: string, weight = 0): Reservation {
    const reservation = this.tryReserve(requestKey, role, origin, weight, 0);
    if (reservation === undefined) throw new Error("unreachable: no limit");
    return reservation;
  }

  /** As `reserve`, unless the worker holds `limit` reservations already (0: no limit): checked and taken at once. */
  tryReserve(requestKey: bigint, role: Role, origin: string, weight: number, limit: number): Reservation | undefined {
    const counts = this.#counts;
    const slot = counts.slot(role, origin);
    if (!counts.take(slot, limit, weight)) return undefined;
    return new TableReservation(requestKey, role, origin, counts, slot, weight);
  }

  load(role: Role, origin: string): number {
    return this.#counts.load(role, origin);
  }

  /** Sum of the weights of the reservations held on the worker. */
  weight(role: Role, origin: string): number {
    return this.#counts.weight(role, origin);
  }

  /** Reservations not yet released, across all workers. */
  active(): number {
    return this.#counts.active();
  }

  /** The next round-robin turn of a role's router for `sequence` (a model), shared by every event loop when they share the table. */
  turn(role: Role, sequence = ""): number {
    return this.#counts.turn(role, sequence);
  }

  snapshot(): Record<string, number> {
    return this.#counts.snapshot();
  }
}

export interface Reservation {
  readonly requestKey: bigint;
  readonly role: Role;
  readonly origin: string;
  /** Idempotent: only the first call counts. */
  release(): void;
  /** The leg completed (before or in the turn of its release): a coordinator's /finish reports success. */
  completed?(): void;
  /** The attempt runs on past its request's end (a hand-off the settler follows): a coordinator's /finish waits for `settled`. */
  keepUntil?(settled: Promise<unknown>): void;
}

/**
 * Where the counts live: this loop's maps, or the memory the loops share. Workers are found by
 * role, then origin: the routers read a candidate's load on every pick (hundreds per placement
 * in a large fleet), so a read builds no key.
 */
interface LoadCounts<Slot> {
  /** A worker's counts, for a reservation on it. */
  slot(role: Role, origin: string): Slot;
  /** One more request and its weight, unless the worker is at `limit` (0: no limit). */
  take(slot: Slot, limit: number, weight: number): boolean;
  /** Undoes one `take`. */
  give(slot: Slot, weight: number): void;
  load(role: Role, origin: string): number;
  weight(role: Role, origin: string): number;
  active(): number;
  turn(role: Role, sequence: string): number;
  snapshot(): Record<string, number>;
}

interface Counter {
  readonly role: Role;
  readonly origin: string;
  load: number;
  weight: number;
}

/**
 * One held reservation, as one object with a method: a streamed request holds its generation
 * leg's for as long as the stream stays open, where a closure, its scope and its slot cost three.
 */
class TableReservation implements Reservation {
  readonly requestKey: bigint;
  readonly role: Role;
  readonly origin: string;
  readonly #counts: LoadCounts<unknown>;
  readonly #slot: unknown;
  readonly #weight: number;
  #held = true;

  constructor(requestKey: bigint, role: Role, origin: string, counts: LoadCounts<unknown>, slot: unknown, weight: number) {
    this.requestKey = requestKey;
    this.role = role;
    this.origin = origin;
    this.#counts = counts;
    this.#slot = slot;
    this.#weight = weight;
  }

  release(): void {
    if (!this.#held) return;
    this.#held = false;
    this.#counts.give(this.#slot, this.#weight);
  }
}

class LocalCounts implements LoadCounts<Counter> {
  /** Workers holding reservations only: a counter back at zero is dropped, so idle workers leave no entry behind. */
  readonly #byRole: Record<Role, Map<string, Counter>> = { context: new Map(), generation: new Map() };
  /** Each role's turns by sequence (no key built per pick). */
  readonly #turns: Record<Role, Map<string, number>> = { context: new Map(), generation: new Map() };
  #active = 0;

  slot(role: Role, origin: string): Counter {
    const counters = this.#byRole[role];
    let counter = counters.get(origin);
    if (counter === undefined) {
      counter = { role, origin, load: 0, weight: 0 };
      counters.set(origin, counter);
    }
    return counter;
  }

  take(counter: Counter, limit: number, weight: number): boolean {
    if (limit > 0 && counter.load >= limit) return false;
    counter.load++;
    counter.weight += weight;
    this.#active++;
    return true;
  }

  give(counter: Counter, weight: number): void {
    counter.load--;
    counter.weight -= weight;
    this.#active--;
    if (counter.load <= 0) this.#byRole[counter.role].delete(counter.origin);
  }

  load(role: Role, origin: string): number {
    return this.#byRole[role].get(origin)?.load ?? 0;
  }

  weight(role: Role, origin: string): number {
    return this.#byRole[role].get(origin)?.weight ?? 0;
  }

  active(): number {
    return this.#active;
  }

  turn(role: Role, sequence: string): number {
    const turns = this.#turns[role];
    const turn = turns.get(sequence) ?? 0;
    turns.set(sequence, (turn + 1) % 1_000_000_007);
    return turn;
  }

  snapshot(): Record<string, number> {
    const out: Record<string, number> = {};
    for (const role of ["context", "generation"] as const) {
      for (const [origin, counter] of this.#byRole[role]) if (counter.load > 0) out[`${role} ${origin}`] = counter.load;
    }
    return out;
  }
}

class SharedCounts implements LoadCounts<number> {
  readonly #shared: SharedLoad;

  constructor(shared: SharedLoad) {
    this.#shared = shared;
  }

  slot(role: Role, origin: string): number {
    return this.#shared.slot(role, origin);
  }

  take(slot: number, limit: number, weight: number): boolean {
    if (!this.#shared.tryAdd(slot, limit)) return false;
    if (weight > 0) this.#shared.addWeight(slot, weight);
    return true;
  }

  give(slot: number, weight: number): void {
    this.#shared.remove(slot);
    if (weight > 0) this.#shared.addWeight(slot, -weight);
  }

  load(role: Role, origin: string): number {
    return this.#shared.load(this.#shared.slot(role, origin));
  }

  weight(role: Role, origin: string): number {
    return this.#shared.weight(this.#shared.slot(role, origin));
  }

  active(): number {
    return this.#shared.active();
  }

  turn(role: Role, sequence: string): number {
    return this.#shared.turn(role, sequence);
  }

  snapshot(): Record<string, number> {
    return this.#shared.snapshot();
  }
}
