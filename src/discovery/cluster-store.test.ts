import { describe, expect, test } from "bun:test";
import { ClusterStore, StoreFullError, type StoreEvent } from "./cluster-store.ts";

function clock(): { now: () => number; advance(ms: number): void } {
  let now = 1000;
  return { now: () => now, advance: (ms) => void (now += ms) };
}

const item = (key: string, extra: { ttl?: number; overwriteIfExists?: boolean } = {}) => ({
  key,
  value: `v:${key}`,
  ttl: extra.ttl ?? -1,
  expireTime: -1,
  overwriteIfExists: extra.overwriteIfExists ?? false,
});

describe("ClusterStore", () => {
  test("an item with a ttl expires: gone from get, and the sweep reports its deletion once", () => {
    const time = clock();
    const store = new ClusterStore({ now: time.now });
    const events: StoreEvent[] = [];
    store.watch("/w/", (event) => events.push(event));
    expect(store.set(item("/w/a", { ttl: 2 }))).toBe(true);
    time.advance(1500);
    expect(store.get("/w/a")).toBe("v:/w/a");
    expect(store.expire("/w/a", 2)).toBe(true);
    time.advance(1500);
    store.sweep();
    expect(store.get("/w/a")).toBe("v:/w/a");
    time.advance(600);
    store.sweep();
    store.sweep();
    expect(store.get("/w/a")).toBeUndefined();
    expect(events.map((event) => event.kind)).toEqual(["set", "delete"]);
  });

  test("set refuses an existing key unless asked to overwrite; watchers see only their prefix", () => {
    const store = new ClusterStore({ now: clock().now });
    const events: string[] = [];
    store.watch("/w/", (event) => events.push(`${event.kind} ${event.item.key}`));
    expect(store.set(item("/w/a"))).toBe(true);
    expect(store.set(item("/w/a"))).toBe(false);
    expect(store.set(item("/w/a", { overwriteIfExists: true }))).toBe(true);
    expect(store.set(item("/other"))).toBe(true);
    expect(store.delete("/w/a")).toBe(true);
    expect(store.delete("/w/a")).toBe(false);
    expect(events).toEqual(["set /w/a", "set /w/a", "delete /w/a"]);
  });

  test("is bounded in keys, after expired ones are swept", () => {
    const time = clock();
    const store = new ClusterStore({ now: time.now, maxKeys: 2 });
    store.set(item("/a", { ttl: 1 }));
    store.set(item("/b"));
    expect(() => store.set(item("/c"))).toThrow(StoreFullError);
    time.advance(2000);
    expect(store.set(item("/c"))).toBe(true);
  });
});

describe("ClusterStore, as upstream's HttpClusterStorageServer", () => {
  // tests/unittest/disaggregated/test_cluster_storage_prefix_expiry.py @ 02f8c556 (test_get_prefix_omits_expired_entries).
  test("get_prefix omits expired entries, values and keys only, before any sweep", () => {
    const time = clock();
    const store = new ClusterStore({ now: time.now });
    store.set({ key: "worker/live", value: "live", ttl: -1, expireTime: -1, overwriteIfExists: false });
    store.set({ key: "worker/ttl-live", value: "fresh", ttl: 15, expireTime: -1, overwriteIfExists: false });
    store.set({ key: "worker/expired", value: "stale", ttl: 5, expireTime: -1, overwriteIfExists: false });
    time.advance(10_000);
    expect(store.getPrefix("worker/", false)).toEqual({ "worker/live": "live", "worker/ttl-live": "fresh" });
    expect(store.getPrefix("worker/", true)).toEqual({ "worker/live": "", "worker/ttl-live": "" });
  });
});

const big = (key: string, ttl = -1) => ({ key, value: "v".repeat(900), ttl, expireTime: -1, overwriteIfExists: true });

describe("ClusterStore bounds", () => {
  test("is bounded in bytes: a full store drops its expired keys first, then refuses saying how full it is", () => {
    const time = clock();
    const store = new ClusterStore({ now: time.now, maxBytes: 3000 });
    store.set(big("/a", 1));
    store.set(big("/b"));
    store.set(big("/c"));
    expect(store.size).toEqual({ keys: 3, bytes: 3 * (900 + 2 + 4 + 2) });
    time.advance(2000);
    // /a expired: its bytes go to /d.
    expect(store.set(big("/d"))).toBe(true);
    expect(() => store.set(big("/e"))).toThrow(
      "the cluster storage is full after dropping its expired keys: 3 keys, 2724 bytes (at most 10000 keys, 3000 bytes)",
    );
    // Overwriting a key costs only the difference; deleting frees its bytes.
    expect(store.set(big("/d"))).toBe(true);
    store.delete("/b");
    expect(store.set(big("/e"))).toBe(true);
    expect(store.size.bytes).toBeLessThanOrEqual(3000);
    // A get_prefix answer is at most the store's bytes.
    expect(JSON.stringify(store.getPrefix("/", false)).length).toBeLessThanOrEqual(3000);
  });

  test("a TTL (set, expire_time or a refresh) is capped at an hour", () => {
    const time = clock();
    const store = new ClusterStore({ now: time.now });
    store.set({ key: "/ttl", value: "", ttl: 10 * 365 * 86_400, expireTime: -1, overwriteIfExists: false });
    store.set({ key: "/at", value: "", ttl: -1, expireTime: 1e12, overwriteIfExists: false });
    store.set({ key: "/refreshed", value: "", ttl: 10, expireTime: -1, overwriteIfExists: false });
    expect(store.expire("/refreshed", 1e9)).toBe(true);
    time.advance(3600 * 1000 - 1);
    expect(Object.keys(store.getPrefix("/", true)).toSorted()).toEqual(["/at", "/refreshed", "/ttl"]);
    time.advance(2);
    expect(store.getPrefix("/", true)).toEqual({});
  });
});

describe("ClusterStore hand-over within the bounds", () => {
  test("adopted items count against the byte bound and their TTL is capped, so the store's size stays exact", () => {
    const time = clock();
    const old = new ClusterStore({ now: time.now });
    old.set(big("/a"));
    old.set(big("/b", 60));
    const store = new ClusterStore({ now: time.now, maxBytes: 2000 });
    expect(store.adopt([...old.handOver(), { key: "/c", value: "v".repeat(900), ttlMs: 10 * 86_400_000, from: undefined }])).toBe(2);
    expect(store.size).toEqual({ keys: 2, bytes: 2 * 908 });
    expect(() => store.set(big("/d"))).toThrow(StoreFullError);
    store.delete("/a");
    expect(store.size.bytes).toBe(908);
    expect(store.adopt([{ key: "/c", value: "v".repeat(900), ttlMs: 10 * 86_400_000, from: undefined }])).toBe(1);
    time.advance(3600 * 1000 + 1);
    expect(store.getPrefix("/", true)).toEqual({});
    expect(store.size).toEqual({ keys: 0, bytes: 0 });
  });
});

/** Time passing on a loop that runs: the store looks at its clock every 100 ms, as its sampler would. */
function running(store: ClusterStore, time: { advance(ms: number): void }, ms: number): void {
  for (let left = ms; left > 0; left -= 100) {
    time.advance(Math.min(100, left));
    store.getPrefix("", true);
  }
}

describe("ClusterStore across a stall of its own event loop", () => {
  test("a key refreshed before and after a stall longer than its TTL outlives it; left alone it still expires", () => {
    const time = clock();
    const stalls: number[] = [];
    const store = new ClusterStore({ now: time.now, onStall: (ms) => stalls.push(ms) });
    store.start();
    try {
      expect(store.set({ key: "w", value: "worker", ttl: 2, expireTime: -1, overwriteIfExists: true })).toBe(true);
      running(store, time, 1000);
      expect(store.expire("w", 2)).toBe(true);
      time.advance(2500);
      // The refresh that queued behind the stall comes first, then the sweep.
      expect(store.expire("w", 2)).toBe(true);
      store.sweep();
      expect(store.get("w")).toBe("worker");
      expect(stalls).toHaveLength(1);
      running(store, time, 1900);
      expect(store.get("w")).toBe("worker");
      running(store, time, 200);
      store.sweep();
      expect(store.get("w")).toBeUndefined();
    } finally {
      store.stop();
    }
  });

  test("a stall found by the sweep itself does not expire a key whose TTL it straddles", () => {
    const time = clock();
    const store = new ClusterStore({ now: time.now });
    store.start();
    try {
      store.set({ key: "w", value: "worker", ttl: 2, expireTime: -1, overwriteIfExists: true });
      running(store, time, 1500);
      time.advance(2500);
      store.sweep();
      expect(store.get("w")).toBe("worker");
      expect(store.stalledMs).toBe(2400);
    } finally {
      store.stop();
    }
  });
});
