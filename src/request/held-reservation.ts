import type { Role } from "../config/types.ts";
import type { Reservation } from "../routing/reservations.ts";

/** A reservation the request holds: released early, it leaves the request's set. One object, its methods shared (not closures per leg). */
export class HeldReservation implements Reservation {
  readonly requestKey: bigint;
  readonly role: Role;
  readonly origin: string;
  readonly #reservation: Reservation;
  readonly #held: Reservation[];

  constructor(reservation: Reservation, held: Reservation[]) {
    this.requestKey = reservation.requestKey;
    this.role = reservation.role;
    this.origin = reservation.origin;
    this.#reservation = reservation;
    this.#held = held;
  }

  release(): void {
    const at = this.#held.indexOf(this.#reservation);
    if (at >= 0) this.#held.splice(at, 1);
    this.#reservation.release();
  }

  completed(): void {
    this.#reservation.completed?.();
  }

  keepUntil(settled: Promise<unknown>): void {
    this.#reservation.keepUntil?.(settled);
  }
}
