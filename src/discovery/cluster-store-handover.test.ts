import { describe, expect, test } from "bun:test";
import { ClusterStore, type StoreEvent } from "./cluster-store.ts";

function clock(start: number): { now: () => number; advance(ms: number): void } {
  let now = start;
  return { now: () => now, advance: (ms) => void (now += ms) };
}

const set = (store: ClusterStore, key: string, ttl: number) =>
  store.set({ key, value: `v:${key}`, ttl, expireTime: -1, overwriteIfExists: true, from: "10.0.0.7" });

describe("ClusterStore hand-over between two processes", () => {
  test("items keep their time left across processes whose clocks differ, and the new store's watchers see them as sets", () => {
    const oldClock = clock(50_000);
    const old = new ClusterStore({ now: oldClock.now });
    set(old, "/w/a", 10);
    set(old, "/w/forever", -1);
    oldClock.advance(4000);
    const handed = old.handOver();
    expect(handed).toEqual([
      { key: "/w/a", value: "v:/w/a", ttlMs: 6000, from: "10.0.0.7" },
      { key: "/w/forever", value: "v:/w/forever", ttlMs: undefined, from: "10.0.0.7" },
    ]);
    const newClock = clock(3);
    const next = new ClusterStore({ now: newClock.now });
    const events: StoreEvent[] = [];
    next.watch("/w/", (event) => events.push(event));
    expect(next.adopt(handed)).toBe(2);
    expect(events.map((event) => [event.kind, event.item.key, event.item.from])).toEqual([
      ["set", "/w/a", "10.0.0.7"],
      ["set", "/w/forever", "10.0.0.7"],
    ]);
    newClock.advance(5999);
    expect(next.get("/w/a")).toBe("v:/w/a");
    newClock.advance(2);
    expect(next.get("/w/a")).toBeUndefined();
    expect(next.get("/w/forever")).toBe("v:/w/forever");
  });

  test("a key the new store already holds keeps the later expiry and its own value, with no second set event", () => {
    const time = clock(0);
    const next = new ClusterStore({ now: time.now });
    set(next, "/w/a", 2);
    const events: StoreEvent[] = [];
    next.watch("/w/", (event) => events.push(event));
    expect(next.adopt([{ key: "/w/a", value: "stale", ttlMs: 9000, from: undefined }])).toBe(0);
    expect(events).toEqual([]);
    time.advance(8000);
    expect(next.get("/w/a")).toBe("v:/w/a");
    expect(next.adopt([{ key: "/w/a", value: "stale", ttlMs: 10, from: undefined }])).toBe(0);
    time.advance(900);
    expect(next.get("/w/a")).toBe("v:/w/a");
  });

  test("adopting stops at the store's key bound", () => {
    const next = new ClusterStore({ maxKeys: 2 });
    const handed = ["/w/a", "/w/b", "/w/c"].map((key) => ({ key, value: "x", ttlMs: 5000, from: undefined }));
    expect(next.adopt(handed)).toBe(2);
    expect(Object.keys(next.getPrefix("/w/", true))).toEqual(["/w/a", "/w/b"]);
  });
  test("at the release, an item handed over earlier that the old store no longer holds goes with a delete event, unless set or refreshed here since", () => {
    const next = new ClusterStore();
    const handed = ["/w/gone", "/w/kept", "/w/reset", "/w/refreshed"].map((key) => ({
      key,
      value: `v:${key}`,
      ttlMs: 60_000,
      from: undefined,
    }));
    expect(next.adopt(handed)).toBe(4);
    set(next, "/w/reset", 30);
    expect(next.expire("/w/refreshed", 30)).toBe(true);
    const events: StoreEvent[] = [];
    next.watch("/w/", (event) => events.push(event));
    expect(next.forgetHandedExcept(new Set(["/w/kept"]))).toBe(1);
    expect(events.map((event) => [event.kind, event.item.key])).toEqual([["delete", "/w/gone"]]);
    expect(Object.keys(next.getPrefix("/w/", true)).toSorted()).toEqual(["/w/kept", "/w/refreshed", "/w/reset"]);
  });
});
