/**
 * TensorRT-LLM's HTTP cluster storage, served by the proxy itself when disagg_cluster's
 * cluster_uri is http(s):// (tensorrt_llm/serve/cluster_storage.py @ 057d4a79,
 * HttpClusterStorageServer): a key-value map whose items may expire, swept every second, with
 * SET and DELETE events for watchers of a key prefix. Workers register in it; the proxy's
 * discovery watches the workers prefix.
 *
 * Beyond upstream, it is bounded — keys, key and value sizes, the bytes of all items (so a
 * get_prefix answer, at most every item, is bounded too), and expiries (a TTL is capped) —
 * and remembers the address each item was set from, so a worker registering host 0.0.0.0 can
 * be reached. Upstream's semantics otherwise: a key set without a TTL never expires.
 */

import { StallClock } from "./stall-clock.ts";

export interface StorageItem {
  readonly key: string;
  readonly value: string;
  /** Monotonic ms after which the item is gone; undefined: never. */
  readonly expiresAt: number | undefined;
  /** Remote address of the request that set it (undefined when set in-process). */
  readonly from: string | undefined;
}

export type StoreEvent = { readonly kind: "set"; readonly item: StorageItem } | { readonly kind: "delete"; readonly item: StorageItem };

/** The body of POST /set, as upstream's StorageItem model has it. */
export interface SetRequest {
  readonly key: string;
  readonly value: string;
  /** Seconds; > 0 sets an expiry when expire_time is not given. */
  readonly ttl: number;
  /** Seconds of the store's clock; >= 0 wins over ttl (upstream takes it as given). */
  readonly expireTime: number;
  readonly overwriteIfExists: boolean;
  readonly from?: string | undefined;
}

export interface ClusterStoreOptions {
  /** Monotonic milliseconds (performance.now in production; a test clock in tests). */
  readonly now?: () => number;
  /** How often expired items are swept (upstream: 1 s). */
  readonly sweepIntervalMs?: number;
  readonly maxKeys?: number;
  /** Bytes of all items as a get_prefix answer spells them (JSON strings). */
  readonly maxBytes?: number;
  /** A stall of the store's event loop was found and left uncharged to every TTL (milliseconds). */
  readonly onStall?: (stallMs: number) => void;
}

/**
 * A worker's registration is ~150 bytes and lives for its inactive_timeout_sec (upstream's
 * default 10 s) between heartbeats: 10,000 keys and 8 MiB hold far more workers than a
 * cluster has, and a full store then holds 8 MiB, not the 655 MB keys × values allowed.
 */
export const STORE_LIMITS = {
  maxKeyBytes: 1024,
  maxValueBytes: 64 * 1024,
  maxKeys: 10_000,
  maxBytes: 8 * 1024 * 1024,
  maxTtlSeconds: 3600,
} as const;

/** What an item costs in a get_prefix answer: its key and value as JSON strings. */
function itemBytes(key: string, value: string): number {
  return Buffer.byteLength(JSON.stringify(key)) + Buffer.byteLength(JSON.stringify(value)) + 2;
}

/** Seconds from now, capped: an expiry further out than the cap is the cap's. */
function cappedMs(seconds: number): number {
  return Math.min(seconds, STORE_LIMITS.maxTtlSeconds) * 1000;
}

export class StoreFullError extends Error {}

/** An item as one process hands it to the next (an upgrade): its expiry as time left, since clocks differ. */
export interface HandedItem {
  readonly key: string;
  readonly value: string;
  /** Milliseconds until it expires; undefined: never. */
  readonly ttlMs: number | undefined;
  readonly from: string | undefined;
}

export class ClusterStore {
  readonly #items = new Map<string, StorageItem>();
  readonly #watchers = new Set<{ readonly prefix: string; readonly onEvent: (event: StoreEvent) => void }>();
  readonly #now: () => number;
  readonly #sweepIntervalMs: number;
  readonly #maxKeys: number;
  readonly #maxBytes: number;
  #bytes = 0;
  /** Items as a hand-over added them; one set or refreshed here since is another object. */
  readonly #adopted = new WeakSet<StorageItem>();
  #timer: ReturnType<typeof setInterval> | undefined;
  /** The store's own clock: a stall of its event loop is charged to no TTL. */
  readonly #clock: StallClock;

  constructor(options: ClusterStoreOptions = {}) {
    this.#now = options.now ?? (() => performance.now());
    this.#sweepIntervalMs = options.sweepIntervalMs ?? 1000;
    this.#maxKeys = options.maxKeys ?? STORE_LIMITS.maxKeys;
    this.#maxBytes = options.maxBytes ?? STORE_LIMITS.maxBytes;
    this.#clock = new StallClock(this.#now, options.onStall);
  }

  /** Keys held and their bytes, for the message of a full store. */
  get size(): { readonly keys: number; readonly bytes: number } {
    return { keys: this.#items.size, bytes: this.#bytes };
  }

  /** Starts the expiry sweep and the stall sampler; idempotent. */
  start(): void {
    this.#clock.start();
    this.#timer ??= setInterval(() => this.sweep(), this.#sweepIntervalMs);
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#clock.stop();
    this.#timer = undefined;
  }

  /** Milliseconds of stalls left uncharged to TTLs since the store started. */
  get stalledMs(): number {
    return this.#clock.stalledMs;
  }

  /** False when the key exists and overwriting was not asked for (upstream's answer). */
  set(request: SetRequest): boolean {
    const existing = this.#live(request.key);
    if (existing !== undefined && !request.overwriteIfExists) return false;
    const bytes = itemBytes(request.key, request.value);
    const fits = (): boolean =>
      (existing !== undefined || this.#items.size < this.#maxKeys) &&
      this.#bytes - (existing === undefined ? 0 : itemBytes(existing.key, existing.value)) + bytes <= this.#maxBytes;
    if (!fits()) {
      // Expired keys go first; only a store full of live keys refuses.
      this.sweep();
      if (!fits()) {
        throw new StoreFullError(
          `the cluster storage is full after dropping its expired keys: ${this.#items.size} keys, ${this.#bytes} bytes (at most ${this.#maxKeys} keys, ${this.#maxBytes} bytes)`,
        );
      }
    }
    const now = this.#clock.now();
    // expire_time is in the store's own clock (upstream's key_time); either way at most maxTtlSeconds away.
    const expiresAt =
      request.expireTime >= 0
        ? Math.min(request.expireTime * 1000, now + STORE_LIMITS.maxTtlSeconds * 1000)
        : request.ttl > 0
          ? now + cappedMs(request.ttl)
          : undefined;
    const item: StorageItem = { key: request.key, value: request.value, expiresAt, from: request.from };
    if (existing !== undefined) this.#bytes -= itemBytes(existing.key, existing.value);
    this.#bytes += bytes;
    this.#items.set(request.key, item);
    this.#notify({ kind: "set", item });
    return true;
  }

  /** The value, or undefined when missing or expired (an expired item is dropped on the way). */
  get(key: string): string | undefined {
    return this.#live(key)?.value;
  }

  /** Moves the item's expiry to now + ttl (capped); false when the key does not exist. */
  expire(key: string, ttlSeconds: number): boolean {
    const item = this.#live(key);
    if (item === undefined) return false;
    this.#items.set(key, { ...item, expiresAt: this.#clock.now() + cappedMs(ttlSeconds) });
    return true;
  }

  delete(key: string): boolean {
    const item = this.#items.get(key);
    if (item === undefined) return false;
    this.#drop(item);
    this.#notify({ kind: "delete", item });
    return true;
  }

  /** Live items under the prefix, key → value ("" for every value with keysOnly). */
  getPrefix(prefix: string, keysOnly: boolean): Record<string, string> {
    const out: Record<string, string> = {};
    // Deleting the entry being visited (an expired one) is safe while iterating a Map.
    for (const key of this.#items.keys()) {
      if (!key.startsWith(prefix)) continue;
      const item = this.#live(key);
      if (item !== undefined) out[key] = keysOnly ? "" : item.value;
    }
    return out;
  }

  /** The live items under the prefix, with where they came from. */
  items(prefix: string): StorageItem[] {
    return [...this.#items.keys()].filter((key) => key.startsWith(prefix)).flatMap((key) => this.#live(key) ?? []);
  }

  /** Events for keys under `prefix` until the returned function is called. */
  watch(prefix: string, onEvent: (event: StoreEvent) => void): () => void {
    const watcher = { prefix, onEvent };
    this.#watchers.add(watcher);
    return () => this.#watchers.delete(watcher);
  }

  /** Every live item, for the process taking over from this one. */
  handOver(): HandedItem[] {
    const now = this.#clock.now();
    return this.items("").map((item) => ({
      key: item.key,
      value: item.value,
      ttlMs: item.expiresAt === undefined ? undefined : Math.max(0, item.expiresAt - now),
      from: item.from,
    }));
  }

  /**
   * Items handed over by the process this one replaces: a key not held here is added (with a
   * set event, so discovery sees it), a key held here keeps the later expiry; the bound holds.
   */
  adopt(items: readonly HandedItem[]): number {
    let added = 0;
    for (const handed of items) {
      const expiresAt =
        handed.ttlMs === undefined ? undefined : this.#clock.now() + Math.min(handed.ttlMs, STORE_LIMITS.maxTtlSeconds * 1000);
      const held = this.#live(handed.key);
      if (held !== undefined) {
        const later = held.expiresAt === undefined || expiresAt === undefined ? undefined : Math.max(held.expiresAt, expiresAt);
        this.#items.set(held.key, { ...held, expiresAt: later });
        continue;
      }
      const bytes = itemBytes(handed.key, handed.value);
      if (this.#items.size >= this.#maxKeys || this.#bytes + bytes > this.#maxBytes) break;
      const item: StorageItem = { key: handed.key, value: handed.value, expiresAt, from: handed.from };
      this.#items.set(item.key, item);
      this.#adopted.add(item);
      this.#bytes += bytes;
      this.#notify({ kind: "set", item });
      added += 1;
    }
    return added;
  }

  /**
   * The old process's last word at the release: an item an earlier hand-over added and it no
   * longer holds (the worker deregistered meanwhile) goes, with a delete event, unless it was
   * set or refreshed here since. Returns how many went.
   */
  forgetHandedExcept(keys: ReadonlySet<string>): number {
    let gone = 0;
    for (const item of this.#items.values()) {
      if (!this.#adopted.has(item) || keys.has(item.key)) continue;
      this.#drop(item);
      this.#notify({ kind: "delete", item });
      gone += 1;
    }
    return gone;
  }

  /** Drops every expired item, each with a delete event. */
  sweep(): void {
    const now = this.#clock.now();
    for (const item of this.#items.values()) {
      if (item.expiresAt !== undefined && item.expiresAt < now) {
        this.#drop(item);
        this.#notify({ kind: "delete", item });
      }
    }
  }

  #live(key: string): StorageItem | undefined {
    const item = this.#items.get(key);
    if (item === undefined) return undefined;
    if (item.expiresAt === undefined || item.expiresAt > this.#clock.now()) return item;
    this.#drop(item);
    this.#notify({ kind: "delete", item });
    return undefined;
  }

  #drop(item: StorageItem): void {
    this.#items.delete(item.key);
    this.#bytes -= itemBytes(item.key, item.value);
  }

  #notify(event: StoreEvent): void {
    for (const watcher of this.#watchers) if (event.item.key.startsWith(watcher.prefix)) watcher.onEvent(event);
  }
}
