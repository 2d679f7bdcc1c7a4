/**
 * TensorRT-LLM's HTTP cluster storage, served by the proxy itself when disagg_cluster's
 * cluster_uri is http(s):// (tensorrt_llm/serve/cluster_storage.py @ 057d4a79,
 * HttpClusterStorageServer): a key-value map whose items may expire, swept every second, with
 * SET and DELETE events for watchers of a key prefix. Workers register in it; the proxy's
 * discovery watches the workers prefix.
 *
 * Beyond upstream, it is bounded (keys, key and value sizes) and remembers the address each
 * item was set from, so a worker registering host 0.0.0.0 can be reached.
 */

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
}

export const STORE_LIMITS = { maxKeyBytes: 1024, maxValueBytes: 64 * 1024, maxKeys: 10_000 } as const;

export class StoreFullError extends Error {}

export class ClusterStore {
  readonly #items = new Map<string, StorageItem>();
  readonly #watchers = new Set<{ readonly prefix: string; readonly onEvent: (event: StoreEvent) => void }>();
  readonly #now: () => number;
  readonly #sweepIntervalMs: number;
  readonly #maxKeys: number;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(options: ClusterStoreOptions = {}) {
    this.#now = options.now ?? (() => performance.now());
    this.#sweepIntervalMs = options.sweepIntervalMs ?? 1000;
    this.#maxKeys = options.maxKeys ?? STORE_LIMITS.maxKeys;
  }

  /** Starts the expiry sweep; idempotent. */
  start(): void {
    this.#timer ??= setInterval(() => this.sweep(), this.#sweepIntervalMs);
  }

  stop(): void {
    if (this.#timer !== undefined) clearInterval(this.#timer);
    this.#timer = undefined;
  }

  /** False when the key exists and overwriting was not asked for (upstream's answer). */
  set(request: SetRequest): boolean {
    const existing = this.#live(request.key);
    if (existing !== undefined && !request.overwriteIfExists) return false;
    if (existing === undefined && this.#items.size >= this.#maxKeys) {
      this.sweep();
      if (this.#items.size >= this.#maxKeys) throw new StoreFullError(`the cluster storage holds its maximum of ${this.#maxKeys} keys`);
    }
    const expiresAt = request.expireTime >= 0 ? request.expireTime * 1000 : request.ttl > 0 ? this.#now() + request.ttl * 1000 : undefined;
    const item: StorageItem = { key: request.key, value: request.value, expiresAt, from: request.from };
    this.#items.set(request.key, item);
    this.#notify({ kind: "set", item });
    return true;
  }

  /** The value, or undefined when missing or expired (an expired item is dropped on the way). */
  get(key: string): string | undefined {
    return this.#live(key)?.value;
  }

  /** Moves the item's expiry to now + ttl; false when the key does not exist. */
  expire(key: string, ttlSeconds: number): boolean {
    const item = this.#live(key);
    if (item === undefined) return false;
    this.#items.set(key, { ...item, expiresAt: this.#now() + ttlSeconds * 1000 });
    return true;
  }

  delete(key: string): boolean {
    const item = this.#items.get(key);
    if (item === undefined) return false;
    this.#items.delete(key);
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

  /** Drops every expired item, each with a delete event. */
  sweep(): void {
    const now = this.#now();
    for (const [key, item] of this.#items) {
      if (item.expiresAt !== undefined && item.expiresAt < now) {
        this.#items.delete(key);
        this.#notify({ kind: "delete", item });
      }
    }
  }

  #live(key: string): StorageItem | undefined {
    const item = this.#items.get(key);
    if (item === undefined) return undefined;
    if (item.expiresAt === undefined || item.expiresAt > this.#now()) return item;
    this.#items.delete(key);
    this.#notify({ kind: "delete", item });
    return undefined;
  }

  #notify(event: StoreEvent): void {
    for (const watcher of this.#watchers) if (event.item.key.startsWith(watcher.prefix)) watcher.onEvent(event);
  }
}
