import type { Role } from "../config/types.ts";

/**
 * The one table of in-flight load. Each request holds reservations on the workers its legs
 * use; a reservation is released exactly once, whatever ends the request, so the counts (and
 * content weights) the load-aware routers read can never drift.
 */
export class ReservationTable {
  readonly #load = new Map<string, number>();
  readonly #weight = new Map<string, number>();
  #active = 0;

  /**
   * Reserves `origin` in `role` for the request keyed by `requestKey`; `weight` (estimated
   * prompt tokens, default 0) counts towards the worker's content weight until the release.
   */
  reserve(requestKey: bigint, role: Role, origin: string, weight = 0): Reservation {
    const key = loadKey(role, origin);
    add(this.#load, key, 1);
    if (weight > 0) add(this.#weight, key, weight);
    this.#active++;
    let held = true;
    return {
      requestKey,
      role,
      origin,
      release: () => {
        if (!held) return;
        held = false;
        this.#active--;
        add(this.#load, key, -1);
        if (weight > 0) add(this.#weight, key, -weight);
      },
    };
  }

  load(role: Role, origin: string): number {
    return this.#load.get(loadKey(role, origin)) ?? 0;
  }

  /** Sum of the weights of the reservations held on the worker. */
  weight(role: Role, origin: string): number {
    return this.#weight.get(loadKey(role, origin)) ?? 0;
  }

  /** Reservations not yet released, across all workers. */
  active(): number {
    return this.#active;
  }

  snapshot(): Record<string, number> {
    return Object.fromEntries(this.#load);
  }
}

export interface Reservation {
  readonly requestKey: bigint;
  readonly role: Role;
  readonly origin: string;
  /** Idempotent: only the first call counts. */
  release(): void;
}

function loadKey(role: Role, origin: string): string {
  return `${role} ${origin}`;
}

/** Adds `delta` to a counter, dropping it at zero so idle workers leave no entry behind. */
function add(counters: Map<string, number>, key: string, delta: number): void {
  const next = (counters.get(key) ?? 0) + delta;
  if (next <= 0) counters.delete(key);
  else counters.set(key, next);
}
