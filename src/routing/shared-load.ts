/**
 * In-flight load shared by the event loops of one process (`num_workers` > 1: one Bun Worker
 * per loop, all listening on the port). Every loop reserves and releases in the same
 * SharedArrayBuffer with atomic operations, so the per-worker limits, the load the routers
 * read, round-robin turns and admission are one view, not one per loop: a per-worker limit is
 * checked and taken in one compare-and-swap, so no interleaving of loops over-places a worker.
 *
 * Measured against the other design, one owner loop the others ask by message
 * (bench/micro/shared-load.ts): an atomic reserve and release costs well under a microsecond,
 * a question to another thread and its answer tens of microseconds per placement.
 *
 * Workers are found by their `role origin` key in an insert-only directory of SLOTS entries
 * (a slot whose worker left keeps its key, its counts back at zero); each loop caches the
 * slots it has looked up. A key longer than KEY_BYTES or a full directory is a thrown Error:
 * 4,096 distinct workers over a process's life is far beyond any fleet.
 */

import type { Role } from "../config/types.ts";

export const SLOTS = 4096;
export const KEY_BYTES = 320;

/** Int32 words before the per-slot arrays. */
const USED = 0;
const LOCK = 1;
const ACTIVE = 2;
/** Admission: requests in flight, requests waiting, and a sequence bumped at each release (waiters wait on it). */
const ADMITTED = 3;
const WAITING = 4;
const RELEASES = 5;
const HEADER_WORDS = 16;

const LOAD_AT = HEADER_WORDS;
const KEY_LENGTH_AT = LOAD_AT + SLOTS;
const INT_WORDS = KEY_LENGTH_AT + SLOTS;
const WEIGHT_BYTE_OFFSET = INT_WORDS * 4;
const KEY_BYTE_OFFSET = WEIGHT_BYTE_OFFSET + SLOTS * 8;
const TOTAL_BYTES = KEY_BYTE_OFFSET + SLOTS * KEY_BYTES;

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Admission's counts in the shared memory (request/admission.ts's SharedAdmission uses them). */
export interface SharedAdmissionWords {
  admitted(): number;
  waiting(): number;
  /** Takes a slot unless `limit` are taken (0: no limit). */
  tryAdmit(limit: number): boolean;
  release(): void;
  /** Counts a waiter unless `limit` wait already. */
  startWaiting(limit: number): boolean;
  stopWaiting(): void;
  /** Releases so far (any loop); `nextRelease` resolves once it moved past `seen`, or after `ms`. */
  releases(): number;
  nextRelease(seen: number, ms: number): Promise<unknown>;
}

/** A view of the shared memory in one loop; every loop makes its own from the same buffer. */
export class SharedLoad {
  readonly buffer: SharedArrayBuffer;
  readonly words: Int32Array;
  readonly #weights: BigInt64Array;
  readonly #keys: Uint8Array;
  /** This loop's cache of the directory: role, then origin → slot (a lookup builds no key), and slot → key. */
  readonly #slots: Record<Role, Map<string, number>> = { context: new Map(), generation: new Map() };
  readonly #names: string[] = [];

  constructor(buffer: SharedArrayBuffer = new SharedArrayBuffer(TOTAL_BYTES)) {
    if (buffer.byteLength !== TOTAL_BYTES) throw new Error(`shared load buffer of ${buffer.byteLength} bytes, expected ${TOTAL_BYTES}`);
    this.buffer = buffer;
    this.words = new Int32Array(buffer, 0, INT_WORDS);
    this.#weights = new BigInt64Array(buffer, WEIGHT_BYTE_OFFSET, SLOTS);
    this.#keys = new Uint8Array(buffer, KEY_BYTE_OFFSET, SLOTS * KEY_BYTES);
  }

  /** The slot of a worker in a role, added to the directory on first sight. */
  slot(role: Role, origin: string): number {
    const known = this.#slots[role].get(origin);
    if (known !== undefined) return known;
    const key = `${role} ${origin}`;
    const slot = this.#lookUp(key);
    this.#slots[role].set(origin, slot);
    this.#names[slot] = key;
    return slot;
  }

  /**
   * Adds one request to the slot's load unless it is at `limit` (0: no limit): the check and
   * the increment are one compare-and-swap, so concurrent loops never pass the limit together.
   */
  tryAdd(slot: number, limit: number): boolean {
    if (!takeBelow(this.words, LOAD_AT + slot, limit)) return false;
    Atomics.add(this.words, ACTIVE, 1);
    return true;
  }

  remove(slot: number): void {
    Atomics.sub(this.words, LOAD_AT + slot, 1);
    Atomics.sub(this.words, ACTIVE, 1);
  }

  addWeight(slot: number, delta: number): void {
    Atomics.add(this.#weights, slot, BigInt(delta));
  }

  load(slot: number): number {
    return Atomics.load(this.words, LOAD_AT + slot);
  }

  weight(slot: number): number {
    return Number(Atomics.load(this.#weights, slot));
  }

  active(): number {
    return Atomics.load(this.words, ACTIVE);
  }

  /**
   * The next round-robin turn of a role's `sequence` (a model's router), counted across every
   * loop: kept in the weight word of a directory slot of its own, whose key no worker's origin
   * (a URL) can take, and whose load stays 0, so no snapshot lists it.
   */
  turn(role: Role, sequence: string): number {
    const slot = this.slot(role, `turn ${sequence}`);
    return Number(Atomics.add(this.#weights, slot, 1n) % 1_000_000_007n);
  }

  /** Admission's counts, in the same memory. */
  admission(): SharedAdmissionWords {
    const words = this.words;
    return {
      admitted: () => Atomics.load(words, ADMITTED),
      waiting: () => Atomics.load(words, WAITING),
      tryAdmit: (limit) => takeBelow(words, ADMITTED, limit),
      release: () => {
        Atomics.sub(words, ADMITTED, 1);
        Atomics.add(words, RELEASES, 1);
        Atomics.notify(words, RELEASES);
      },
      startWaiting: (limit) => takeBelow(words, WAITING, limit),
      stopWaiting: () => Atomics.sub(words, WAITING, 1),
      releases: () => Atomics.load(words, RELEASES),
      nextRelease: (seen, ms) => {
        const wait = Atomics.waitAsync(words, RELEASES, seen, ms);
        return wait.async ? wait.value : Promise.resolve(wait.value);
      },
    };
  }

  /** Load by `role origin` key, workers at zero left out (as the single-loop table's snapshot). */
  snapshot(): Record<string, number> {
    const out: Record<string, number> = {};
    const used = Atomics.load(this.words, USED);
    for (let slot = 0; slot < used; slot++) {
      const load = this.load(slot);
      if (load > 0) out[this.#name(slot)] = load;
    }
    return out;
  }

  #name(slot: number): string {
    let name = this.#names[slot];
    if (name === undefined) {
      const length = Atomics.load(this.words, KEY_LENGTH_AT + slot);
      name = decoder.decode(this.#keys.slice(slot * KEY_BYTES, slot * KEY_BYTES + length));
      this.#names[slot] = name;
    }
    return name;
  }

  /** Finds or adds the key under the directory lock (held for a scan of at most SLOTS keys, once per key per loop). */
  #lookUp(key: string): number {
    const bytes = encoder.encode(key);
    if (bytes.length > KEY_BYTES) throw new Error(`worker key longer than ${KEY_BYTES} bytes: ${key.slice(0, 80)}…`);
    while (Atomics.compareExchange(this.words, LOCK, 0, 1) !== 0) {
      // Another loop is adding a key: a few hundred nanoseconds.
    }
    try {
      const used = Atomics.load(this.words, USED);
      for (let slot = 0; slot < used; slot++) {
        if (Atomics.load(this.words, KEY_LENGTH_AT + slot) === bytes.length && this.#keyEquals(slot, bytes)) return slot;
      }
      if (used >= SLOTS) throw new Error(`the shared load table holds ${SLOTS} workers already`);
      this.#keys.set(bytes, used * KEY_BYTES);
      Atomics.store(this.words, KEY_LENGTH_AT + used, bytes.length);
      Atomics.store(this.words, USED, used + 1);
      return used;
    } finally {
      Atomics.store(this.words, LOCK, 0);
    }
  }

  #keyEquals(slot: number, bytes: Uint8Array): boolean {
    const start = slot * KEY_BYTES;
    for (let i = 0; i < bytes.length; i++) if (this.#keys[start + i] !== bytes[i]) return false;
    return true;
  }
}

/** Adds one to the word at `at` unless it is at `limit` (0: no limit): the check and the add are one compare-and-swap. */
function takeBelow(words: Int32Array, at: number, limit: number): boolean {
  for (;;) {
    const now = Atomics.load(words, at);
    if (limit > 0 && now >= limit) return false;
    if (Atomics.compareExchange(words, at, now, now + 1) === now) return true;
  }
}
