import { describe, expect, test } from "bun:test";
import type { DiscoveryEvent } from "./types.ts";
import { WorkerSet, type WorkerEntry } from "./worker-set.ts";

function recorded(): { set: WorkerSet; events: DiscoveryEvent[] } {
  const events: DiscoveryEvent[] = [];
  return { set: new WorkerSet((event) => events.push(event)), events };
}

const A = { role: "context", origin: "http://a:1" } as const;
const B = { role: "generation", origin: "http://b:2" } as const;

describe("WorkerSet", () => {
  test("a put adds a worker once and a delete removes it", () => {
    const { set, events } = recorded();
    set.set("k1", A);
    set.set("k1", A);
    set.set("k1", undefined);
    set.set("k1", undefined);
    expect(events).toEqual([
      { kind: "add", ...A },
      { kind: "remove", ...A },
    ]);
  });

  test("a key that changes worker removes the old one before adding the new one", () => {
    const { set, events } = recorded();
    set.set("k1", A);
    set.set("k1", B);
    expect(events).toEqual([
      { kind: "add", ...A },
      { kind: "remove", ...A },
      { kind: "add", ...B },
    ]);
  });

  test("a worker under two keys is added with the first and removed with the last", () => {
    const { set, events } = recorded();
    set.set("old-id", A);
    set.set("new-id", A);
    set.set("old-id", undefined);
    expect(events).toEqual([{ kind: "add", ...A }]);
    set.set("new-id", undefined);
    expect(events).toEqual([
      { kind: "add", ...A },
      { kind: "remove", ...A },
    ]);
  });

  test("one origin in both roles is two workers", () => {
    const { set, events } = recorded();
    set.set("ctx", { role: "context", origin: "http://m:1" });
    set.set("gen", { role: "generation", origin: "http://m:1" });
    expect(events.map((e) => e.role)).toEqual(["context", "generation"]);
  });

  test("a new listing emits removes for what is gone first, then adds, and nothing for what stayed", () => {
    const { set, events } = recorded();
    set.set("k1", A);
    set.set("k2", B);
    events.length = 0;
    const C = { role: "context", origin: "http://c:3" } as const;
    set.replaceAll(
      new Map<string, WorkerEntry>([
        ["k2", B],
        ["k3", C],
      ]),
    );
    expect(events).toEqual([
      { kind: "remove", ...A },
      { kind: "add", ...C },
    ]);
    expect(set.workers()).toEqual([B, C]);
  });
});
