import { describe, expect, test } from "bun:test";
import { ClusterStore, StoreFullError, type StoreEvent } from "./cluster-store.ts";

function clock(): { now: () => number; advance(ms: number): void } {
  let now = 1000;
  return { now: () => now, advance: (ms) => void (now += ms) };
}

const item = (key: string, extra: { ttl?: number; overwriteIfExists?: boolean } = {}) => ({ key, value: `v:${key}`, ttl: extra.ttl ?? -1, expireTime: -1, overwriteIfExists: extra.overwriteIfExists ?? false });

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
