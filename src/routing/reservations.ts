import type { Role } from "../config/types.ts";
import type { SharedLoad } from "./shared-load.ts";

/**
 * The one table of in-flight load. Each request holds reservations on the workers its legs
 * use; a reservation is released exactly once, whatever ends the request, so the counts (and
 * content weights) the load-aware routers read can never drift. With `num_workers` > 1 the
 * counts live in memory every event loop shares (`SharedLoad`), so they are the process's.
 */
export class ReservationTable {
  readonly #counts: LoadCounts;

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
    if (!counts.tryAdd(slot, limit)) return undefined;
    if (weight > 0) counts.addWeight(slot, weight);
    let held = true;
    return {
      requestKey,
      role,
      origin,
      release: () => {
        if (!held) return;
        held = false;
        counts.remove(slot);
        if (weight > 0) counts.addWeight(slot, -weight);
      },
    };
  }

  load(role: Role, origin: string): number {
    return this.#counts.load(this.#counts.slot(role, origin));
  }

  /** Sum of the weights of the reservations held on the worker. */
  weight(role: Role, origin: string): number {
    return this.#counts.weight(this.#counts.slot(role, origin));
  }

  /** Reservations not yet released, across all workers. */
  active(): number {
    return this.#counts.active();
  }

  /** The next round-robin turn of a role (shared by every event loop when they share the table). */
  turn(role: Role): number {
    return this.#counts.turn(role);
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
}

/** Where the counts live: this loop's maps, or the memory the loops share. */
interface LoadCounts {
  slot(role: Role, origin: string): number | string;
  tryAdd(slot: number | string, limit: number): boolean;
  remove(slot: number | string): void;
  addWeight(slot: number | string, delta: number): void;
  load(slot: number | string): number;
  weight(slot: number | string): number;
  active(): number;
  turn(role: Role): number;
  snapshot(): Record<string, number>;
}

class LocalCounts implements LoadCounts {
  readonly #load = new Map<string, number>();
  readonly #weight = new Map<string, number>();
  readonly #turns: Record<Role, number> = { context: 0, generation: 0 };
  #active = 0;

  slot(role: Role, origin: string): string {
    return `${role} ${origin}`;
  }

  tryAdd(key: string, limit: number): boolean {
    if (limit > 0 && (this.#load.get(key) ?? 0) >= limit) return false;
    add(this.#load, key, 1);
    this.#active++;
    return true;
  }

  remove(key: string): void {
    add(this.#load, key, -1);
    this.#active--;
  }

  addWeight(key: string, delta: number): void {
    add(this.#weight, key, delta);
  }

  load(key: string): number {
    return this.#load.get(key) ?? 0;
  }

  weight(key: string): number {
    return this.#weight.get(key) ?? 0;
  }

  active(): number {
    return this.#active;
  }

  turn(role: Role): number {
    const turn = this.#turns[role];
    this.#turns[role] = (turn + 1) % 1_000_000_007;
    return turn;
  }

  snapshot(): Record<string, number> {
    return Object.fromEntries(this.#load);
  }
}

class SharedCounts implements LoadCounts {
  readonly #shared: SharedLoad;

  constructor(shared: SharedLoad) {
    this.#shared = shared;
  }

  slot(role: Role, origin: string): number {
    return this.#shared.slot(role, origin);
  }

  tryAdd(slot: number, limit: number): boolean {
    return this.#shared.tryAdd(slot, limit);
  }

  remove(slot: number): void {
    this.#shared.remove(slot);
  }

  addWeight(slot: number, delta: number): void {
    this.#shared.addWeight(slot, delta);
  }

  load(slot: number): number {
    return this.#shared.load(slot);
  }

  weight(slot: number): number {
    return this.#shared.weight(slot);
  }

  active(): number {
    return this.#shared.active();
  }

  turn(role: Role): number {
    return this.#shared.turn(role);
  }

  snapshot(): Record<string, number> {
    return this.#shared.snapshot();
  }
}

/** Adds `delta` to a counter, dropping it at zero so idle workers leave no entry behind. */
function add(counters: Map<string, number>, key: string, delta: number): void {
  const next = (counters.get(key) ?? 0) + delta;
  if (next <= 0) counters.delete(key);
  else counters.set(key, next);
}
