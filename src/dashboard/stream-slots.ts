/**
 * Who may hold a dashboard event stream (GET /dashboard/events), each costing a snapshot a
 * second. One address holds at most a few, so that one client cannot lock another out (32
 * `curl -N` from one address gave the operator 429); all together at most more. A stream
 * that showed a client key (the operator's) is not counted per address, and is never refused
 * while streams without one are held: the oldest of those is ended to make room.
 */

import { addressBytes } from "../security/networks.ts";

export interface StreamLimits {
  /** Streams without a key from one client address. */
  readonly perAddress: number;
  /** Streams of every kind at once. */
  readonly total: number;
}

export const STREAM_LIMITS: StreamLimits = { perAddress: 8, total: 32 };

/** Who asks for a stream. */
export interface Watcher {
  /** The client's address as this proxy saw it. */
  readonly address: string;
  /** It showed a valid client key. */
  readonly operator: boolean;
}

interface Held {
  readonly watcher: Watcher;
  readonly end: () => void;
}

/** A granted stream: `release` once it ends (more calls do nothing). */
export interface StreamSlot {
  release(): void;
}

export class StreamSlots {
  readonly #limits: StreamLimits;
  /** In the order granted: the first anonymous one is the oldest. */
  readonly #held = new Set<Held>();
  readonly #perAddress = new Map<string, number>();

  constructor(limits: StreamLimits = STREAM_LIMITS) {
    this.#limits = limits;
  }

  /** A slot, or why there is none; `end` closes the stream should an operator need its slot. */
  take(watcher: Watcher, end: () => void): StreamSlot | string {
    const { perAddress, total } = this.#limits;
    if (!watcher.operator && (this.#perAddress.get(clientOf(watcher)) ?? 0) >= perAddress) {
      return `At most ${perAddress} dashboards may watch at once from one address`;
    }
    if (this.#held.size >= total) {
      const anonymous = watcher.operator ? [...this.#held].find((held) => !held.watcher.operator) : undefined;
      if (anonymous === undefined) return `At most ${total} dashboards may watch at once`;
      this.#drop(anonymous);
      anonymous.end();
    }
    const held: Held = { watcher, end };
    this.#held.add(held);
    if (!watcher.operator) this.#perAddress.set(clientOf(watcher), (this.#perAddress.get(clientOf(watcher)) ?? 0) + 1);
    return { release: () => this.#drop(held) };
  }

  /** Streams held now. */
  get size(): number {
    return this.#held.size;
  }

  #drop(held: Held): void {
    if (!this.#held.delete(held) || held.watcher.operator) return;
    const client = clientOf(held.watcher);
    const left = (this.#perAddress.get(client) ?? 1) - 1;
    if (left === 0) this.#perAddress.delete(client);
    else this.#perAddress.set(client, left);
  }
}

/**
 * Whom a stream is counted against: an IPv4 address (IPv4-mapped too), an IPv6 address's /64.
 * One IPv6 host is given a /64 of its own: counted per address, it held every slot.
 */
function clientOf(watcher: Watcher): string {
  const bytes = addressBytes(watcher.address);
  if (bytes?.length !== 16) return bytes === undefined ? watcher.address : bytes.join(".");
  return `${Buffer.from(bytes.subarray(0, 8)).toString("hex")}::/64`;
}
