import { describe, expect, test } from "bun:test";
import { heapStats } from "bun:jsc";
import type { RouterOptions } from "../config/types.ts";
import { ConversationRouter } from "./conversation-router.ts";
import { KvEventPoller } from "./kv-events.ts";
import { ReservationTable } from "./reservations.ts";
import type { RoutingRequest } from "./routing-request.ts";
import type { WorkerEntry } from "../workers/worker-pool.ts";
import { workerProtocol } from "../workers/protocol.ts";

const WORKERS: readonly WorkerEntry[] = ["http://a:1", "http://b:1", "http://c:1"].map((origin) => ({
  origin,
  role: "context",
  ready: true,
  serverInfo: undefined,
  protocol: workerProtocol(undefined, undefined),
}));

function router(options: RouterOptions = {}, maxIndexNodes?: number): { router: ConversationRouter; table: ReservationTable } {
  const table = new ReservationTable();
  const context = { role: "context" as const, table, options, nodeId: 7, events: new KvEventPoller() };
  return { router: new ConversationRouter(context, maxIndexNodes === undefined ? undefined : { maxIndexNodes }), table };
}

function request(promptText: string, conversationId?: string, promptTokenIds?: readonly number[]): RoutingRequest {
  return { conversationId, promptText, promptTokenIds };
}

/** Gives a worker in-flight content weight, so the least-loaded fallback avoids it. */
function load(table: ReservationTable, origin: string, weight = 1000): void {
  table.reserve(0n, "context", origin, weight);
}

function originOf(pick: { worker: WorkerEntry } | undefined): string | undefined {
  return pick?.worker.origin;
}

/** A text of n characters that no other call returns (distinct from its first character). */
function text(seed: string, n: number): string {
  return `${seed} `.repeat(Math.ceil(n / (seed.length + 1))).slice(0, n);
}

/** An id of its own flat megabyte, as a parsed body's string is (a shared repeat would be a rope of one buffer). */
function longId(seed: number): string {
  return Buffer.alloc(1_000_000, 107).toString("latin1") + String(seed);
}

describe("ConversationRouter", () => {
  test("requests of one conversation id stay on its worker, however loaded it becomes", () => {
    const { router: r, table } = router();
    const first = originOf(r.pick(WORKERS, request("hello", "conv-1")));
    load(table, first ?? "");
    for (let turn = 0; turn < 5; turn++) expect(originOf(r.pick(WORKERS, request(`hello ${turn}`, "conv-1")))).toBe(first);
  });

  test("a sub-agent's parent session is its routing key: it goes where the parent went, and a new parent starts on the least loaded worker", () => {
    const { router: r, table } = router();
    const parent = originOf(r.pick(WORKERS, request("parent prompt", "parent-1")));
    load(table, parent!);
    const child: RoutingRequest = { ...request("a different prompt", "child-a"), subagentAffinityId: "parent-1" };
    expect(originOf(r.pick(WORKERS, child))).toBe(parent);
    const orphan: RoutingRequest = { ...request("another prompt", "child-b"), subagentAffinityId: "parent-unknown" };
    const placed = originOf(r.pick(WORKERS, orphan));
    expect(placed).not.toBe(parent);
    expect(originOf(r.pick(WORKERS, { ...request("third prompt", "child-c"), subagentAffinityId: "parent-unknown" }))).toBe(placed);
  });

  test("a new conversation goes to the worker holding the least content weight", () => {
    const { router: r, table } = router();
    load(table, "http://a:1", 100);
    load(table, "http://b:1", 10);
    load(table, "http://c:1", 50);
    expect(originOf(r.pick(WORKERS, request("hi", "new")))).toBe("http://b:1");
  });

  test("without an id, a later turn continues the conversation whose prompt it extends", () => {
    const { router: r, table } = router({ tokensPerBlock: 4 });
    const turn1 = text("alpha", 200);
    const first = r.pick(WORKERS, request(turn1));
    load(table, originOf(first) ?? "");
    const second = r.pick(WORKERS, request(`${turn1}${text("beta", 40)}`));
    expect(originOf(second)).toBe(originOf(first));
    // 12 full blocks of 16 characters matched, counted as 4 tokens each; 240 characters ≈ 60 tokens.
    expect(second).toMatchObject({ matchedTokens: 48, totalTokens: 60 });
  });

  test("a prompt sharing less than match_threshold of its blocks goes to the least loaded worker", () => {
    const { router: r, table } = router({ tokensPerBlock: 4 });
    const turn1 = text("alpha", 200);
    const first = originOf(r.pick(WORKERS, request(turn1)));
    load(table, first ?? "");
    const other = r.pick(WORKERS, request(`${turn1}${text("gamma", 200)}`));
    expect(originOf(other)).not.toBe(first);
    expect(other?.matchedTokens).toBe(0);
  });

  test("a lower match_threshold accepts a shorter shared prefix", () => {
    const { router: r, table } = router({ tokensPerBlock: 4, matchThreshold: 0.4 });
    const turn1 = text("alpha", 200);
    const first = originOf(r.pick(WORKERS, request(turn1)));
    load(table, first ?? "");
    expect(originOf(r.pick(WORKERS, request(`${turn1}${text("gamma", 200)}`)))).toBe(first);
  });

  test("a conversation whose worker is no candidate moves to the least loaded one, and stays there", () => {
    const { router: r, table } = router();
    const first = originOf(r.pick(WORKERS, request("x", "conv")));
    const others = WORKERS.filter((worker) => worker.origin !== first);
    const moved = originOf(r.pick(others, request("x y", "conv")));
    expect(moved).not.toBe(first);
    load(table, moved ?? "");
    expect(originOf(r.pick(WORKERS, request("x y z", "conv")))).toBe(moved);
  });

  test("conversations beyond max_sessions are forgotten, least recently used first", () => {
    const { router: r, table } = router({ maxSessions: 2 });
    const a = originOf(r.pick(WORKERS, request("a", "a")));
    r.pick(WORKERS, request("b", "b"));
    r.pick(WORKERS, request("a", "a")); // a is now more recent than b
    r.pick(WORKERS, request("c", "c"));
    expect(r.conversations).toBe(2);
    load(table, a ?? "", 10_000);
    expect(originOf(r.pick(WORKERS, request("a", "a")))).toBe(a);
    // b was forgotten: it goes to the least loaded worker like a new conversation.
    const b = originOf(r.pick(WORKERS, request("b", "b")));
    expect(b).not.toBe(a);
  });

  test("a conversation id of a megabyte is remembered by its digest: 100 such conversations hold a few MB, not 100, and each stays on its worker", () => {
    const { router: r, table } = router();
    Bun.gc(true);
    const before = heapStats().heapSize;
    const placed: (string | undefined)[] = [];
    for (let i = 0; i < 100; i++) placed.push(originOf(r.pick(WORKERS, request(`prompt ${i}`, longId(i)))));
    Bun.gc(true);
    expect(r.conversations).toBe(100);
    expect(heapStats().heapSize - before).toBeLessThan(20_000_000);
    for (const origin of WORKERS.map((worker) => worker.origin)) load(table, origin, 10_000);
    // Ids alike but for their last characters are distinct conversations, each on its own worker.
    for (let i = 0; i < 100; i += 7) expect(originOf(r.pick(WORKERS, request(`prompt ${i} again`, longId(i))))).toBe(placed[i]);
  });

  test("the prefix index never holds more than its node bound", () => {
    const { router: r } = router({ tokensPerBlock: 1 }, 50);
    for (let i = 0; i < 40; i++) {
      r.pick(WORKERS, request(text(`prompt${i}`, 100)));
      expect(r.indexNodes).toBeLessThanOrEqual(50);
    }
    expect(r.conversations).toBeLessThan(40);
  });

  test("hash_skip_count keeps a shared system prompt from making every request a continuation", () => {
    const system = text("system", 400);
    for (const [skip, same] of [
      [0, true],
      [100, false],
    ] as const) {
      const { router: r, table } = router({ tokensPerBlock: 4, hashSkipCount: skip });
      const first = originOf(r.pick(WORKERS, request(`${system}${text("one", 40)}`)));
      load(table, first ?? "");
      const second = originOf(r.pick(WORKERS, request(`${system}${text("two", 40)}`)));
      expect(second === first).toBe(same);
    }
  });

  test("with use_token_ids the token ids are hashed when the request carries them", () => {
    const ids = Array.from({ length: 100 }, (_, i) => i);
    const { router: r, table } = router({ tokensPerBlock: 8, useTokenIds: true });
    const first = originOf(r.pick(WORKERS, request("unrelated one", undefined, ids)));
    load(table, first ?? "");
    const second = r.pick(WORKERS, request("unrelated two", undefined, [...ids, 100, 101]));
    expect(originOf(second)).toBe(first);
    expect(second).toMatchObject({ matchedTokens: 96, totalTokens: 102 });
  });

  test("a sticky continuation reports the prefix it shares with the conversation's last prompt", () => {
    const { router: r } = router({ tokensPerBlock: 2 });
    r.pick(WORKERS, request("abcdefghijklmnopq", "conv"));
    expect(r.pick(WORKERS, request("abcdefghijklmnopqrstuvwxyz", "conv"))).toMatchObject({ matchedTokens: 4, totalTokens: 7 });
  });

  test("a conversation's next prompt is indexed as if its last one had never been: its old ending is forgotten, its new one found", () => {
    const base = text("alpha", 160);
    const [old, next, more] = [text("old", 160), text("new", 160), text("more", 40)];
    const { router: r } = router({ tokensPerBlock: 4 });
    r.pick(WORKERS, request(`${base}${old}`, "conv"));
    r.pick(WORKERS, request(`${base}${next}`, "conv"));
    for (const probe of [`${base}${old}${more}`, `${base}${next}${more}`]) {
      const { router: fresh } = router({ tokensPerBlock: 4 });
      fresh.pick(WORKERS, request(`${base}${next}`, "conv"));
      expect(r.pick(WORKERS, request(probe))?.matchedTokens).toBe(fresh.pick(WORKERS, request(probe))?.matchedTokens);
    }
  });

  test("without routing information it picks the least loaded worker, round-robin among equals", () => {
    const { router: r } = router();
    expect([1, 2, 3, 4].map(() => originOf(r.pick(WORKERS, undefined)))).toEqual(["http://a:1", "http://b:1", "http://c:1", "http://a:1"]);
    expect(r.pick([], request("x"))).toBeUndefined();
  });
});
