/**
 * The placements a coordinator holds for serving processes, one per (role, req_id), each a
 * lease: /finish ends it, and one nobody finishes (a serving process died, its finishes were
 * lost) is released as failed once `timeoutMs` passed, so a dead process leaks no load. As
 * upstream's reservation timers (disagg_coordinator.py @ 0186c597 _expire_reservation,
 * TRTLLM_DISAGG_COORDINATOR_RESERVATION_TIMEOUT, 180 s).
 */

import type { Role } from "../config/types.ts";

export interface Lease<T> {
  readonly role: Role;
  readonly reqId: bigint;
  readonly held: T;
}

export interface LeaseSettings {
  /** How long a placement lives without its /finish. */
  readonly timeoutMs: number;
  /** Leases held at most: a bound on the table whatever the callers do. */
  readonly maxLeases: number;
}

interface Entry<T> {
  readonly lease: Lease<T>;
  readonly timer: ReturnType<typeof setTimeout>;
}

export class LeaseTable<T> {
  readonly #entries = new Map<string, Entry<T>>();
  /** How many leases each req_id holds (its context and generation legs). */
  readonly #requests = new Map<bigint, number>();
  readonly #settings: LeaseSettings;
  readonly #expired: (lease: Lease<T>) => void;

  constructor(settings: LeaseSettings, expired: (lease: Lease<T>) => void) {
    this.#settings = settings;
    this.#expired = expired;
  }

  get size(): number {
    return this.#entries.size;
  }

  /** Distinct requests holding a lease. */
  get requests(): number {
    return this.#requests.size;
  }

  get full(): boolean {
    return this.#entries.size >= this.#settings.maxLeases;
  }

  holds(reqId: bigint): boolean {
    return this.#requests.has(reqId);
  }

  /** Takes the lease out (its timer stopped); undefined when none is held. */
  take(role: Role, reqId: bigint): Lease<T> | undefined {
    const key = keyOf(role, reqId);
    const entry = this.#entries.get(key);
    if (entry === undefined) return undefined;
    clearTimeout(entry.timer);
    this.#forget(key, reqId);
    return entry.lease;
  }

  /** Holds a new lease; the caller took any earlier one of the same (role, req_id) first. */
  hold(lease: Lease<T>): void {
    const key = keyOf(lease.role, lease.reqId);
    const timer = setTimeout(() => {
      if (this.#entries.get(key)?.lease !== lease) return;
      this.#forget(key, lease.reqId);
      this.#expired(lease);
    }, this.#settings.timeoutMs);
    // A lease must not keep a stopping process alive.
    timer.unref();
    this.#entries.set(key, { lease, timer });
    this.#requests.set(lease.reqId, (this.#requests.get(lease.reqId) ?? 0) + 1);
  }

  /** Every lease, taken out (the coordinator stops). */
  takeAll(): Lease<T>[] {
    const leases = [...this.#entries.values()].map((entry) => {
      clearTimeout(entry.timer);
      return entry.lease;
    });
    this.#entries.clear();
    this.#requests.clear();
    return leases;
  }

  #forget(key: string, reqId: bigint): void {
    this.#entries.delete(key);
    const left = (this.#requests.get(reqId) ?? 1) - 1;
    if (left <= 0) this.#requests.delete(reqId);
    else this.#requests.set(reqId, left);
  }
}

function keyOf(role: Role, reqId: bigint): string {
  return `${role} ${reqId}`;
}
