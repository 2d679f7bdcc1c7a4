import type { Role } from "./worker-pool.ts";

/**
 * The one table of in-flight load. Each request holds reservations on the workers its legs
 * use; a reservation is released exactly once, whatever ends the request, so the counts the
 * load-balancing routers read can never drift.
 */
export class ReservationTable {
  readonly #load = new Map<string, number>();
  #active = 0;

  /** Reserves `origin` in `role` for the request keyed by `requestKey`. */
  reserve(requestKey: bigint, role: Role, origin: string): Reservation {
    const key = loadKey(role, origin);
    this.#load.set(key, (this.#load.get(key) ?? 0) + 1);
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
        const remaining = (this.#load.get(key) ?? 1) - 1;
        if (remaining === 0) this.#load.delete(key);
        else this.#load.set(key, remaining);
      },
    };
  }

  load(role: Role, origin: string): number {
    return this.#load.get(loadKey(role, origin)) ?? 0;
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
