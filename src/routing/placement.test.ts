import { describe, expect, test } from "bun:test";
import { Placement } from "./placement.ts";
import type { RoutingRequest } from "./routing-request.ts";

function placement(router: "round_robin" | "load_balancing", ctx: string[], gen: string[]): Placement {
  const p = new Placement({ contextServers: ctx, generationServers: gen, contextRouter: router, generationRouter: router });
  for (const role of ["context", "generation"] as const) for (const w of p.pool.all(role)) w.ready = true;
  return p;
}

function prompt(tokens: number): RoutingRequest {
  return { conversationId: undefined, promptText: "", promptTokenIds: Array.from({ length: tokens }, () => 1) };
}

function turn(n: number): RoutingRequest {
  return { conversationId: "conv", promptText: `turn ${n}`, promptTokenIds: undefined };
}

describe("Placement", () => {
  test("a pinned retry reserves its worker again under the per-worker limit", () => {
    const p = new Placement({
      contextServers: ["http://c:1"],
      generationServers: ["http://g:1"],
      contextRouter: "round_robin",
      generationRouter: "round_robin",
      maxInflightPerWorker: 1,
    });
    for (const role of ["context", "generation"] as const) for (const w of p.pool.all(role)) w.ready = true;
    const first = p.place({ role: "context", requestKey: 1n, exclude: undefined, avoid: [] });
    expect(() => p.reserveAgain("context", 1n, first.worker, undefined)).toThrow("at its in-flight limit");
    first.reservation.release();
    const again = p.reserveAgain("context", 1n, first.worker, undefined);
    expect(p.table.load("context", "http://c:1")).toBe(1);
    again.reservation.release();
    expect(p.table.active()).toBe(0);
  });

  test("--max-worker-queue refuses a request before its first leg; a leg placed later is not refused so", () => {
    const p = new Placement({
      contextServers: ["http://c:1"],
      generationServers: ["http://g:1"],
      contextRouter: "round_robin",
      generationRouter: "round_robin",
      workerLoadIntervalMs: 1000,
      maxWorkerQueue: 10,
    });
    for (const role of ["context", "generation"] as const) for (const w of p.pool.all(role)) w.ready = true;
    p.loads?.record("http://g:1", { running: 4, waiting: 30, kvUtilization: undefined });
    expect(() => p.refuseWhenSaturated(undefined)).toThrow("more than 10 requests waiting");
    const generation = p.place({ role: "generation", requestKey: 1n, exclude: "http://c:1", avoid: [] });
    expect(generation.worker.origin).toBe("http://g:1");
    generation.reservation.release();
    p.loads?.record("http://g:1", { running: 4, waiting: 3, kvUtilization: undefined });
    expect(() => p.refuseWhenSaturated(undefined)).not.toThrow();
  });

  test("a least-loaded placement weighs the workers' own load reports, prefers a worker not in avoid, and leaves round robin's turn alone", () => {
    const p = new Placement({
      contextServers: ["http://c:1"],
      generationServers: ["http://a:1", "http://b:1", "http://d:1"],
      contextRouter: "round_robin",
      generationRouter: "round_robin",
      workerLoadIntervalMs: 1000,
    });
    for (const role of ["context", "generation"] as const) for (const w of p.pool.all(role)) w.ready = true;
    // The proxy holds nothing anywhere; the workers report a and d busy (other proxies' requests).
    p.loads?.record("http://a:1", { running: 6, waiting: 2, kvUtilization: undefined });
    p.loads?.record("http://d:1", { running: 1, waiting: 0, kvUtilization: undefined });
    const settle = p.placeLeastLoaded({ role: "generation", requestKey: 1n, exclude: "http://c:1", avoid: [] });
    expect(settle.worker.origin).toBe("http://b:1");
    settle.reservation.release();
    expect(p.placeLeastLoaded({ role: "generation", requestKey: 2n, exclude: "http://c:1", avoid: ["http://b:1"] }).worker.origin).toBe(
      "http://d:1",
    );
    // Every worker avoided: the least loaded of all.
    expect(
      p.placeLeastLoaded({ role: "generation", requestKey: 3n, exclude: "http://c:1", avoid: ["http://a:1", "http://b:1", "http://d:1"] })
        .worker.origin,
    ).toBe("http://b:1");
    // The routers' round robin starts where it would have without those placements.
    expect(p.place({ role: "generation", requestKey: 4n, exclude: "http://c:1", avoid: [] }).worker.origin).toBe("http://a:1");
  });

  test("round_robin cycles through the ready workers", () => {
    const p = placement("round_robin", ["http://a:1", "http://b:1"], ["http://g:1"]);
    const picks = [1, 2, 3, 4].map(() => p.place({ role: "context", requestKey: 1n, exclude: undefined, avoid: [] }).worker.origin);
    expect(picks).toEqual(["http://a:1", "http://b:1", "http://a:1", "http://b:1"]);
  });

  test("load_balancing picks the worker with the fewest reservations", () => {
    const p = placement("load_balancing", ["http://c:1"], ["http://a:1", "http://b:1"]);
    const first = p.place({ role: "generation", requestKey: 1n, exclude: undefined, avoid: [] });
    const second = p.place({ role: "generation", requestKey: 2n, exclude: undefined, avoid: [] });
    expect(second.worker.origin).not.toBe(first.worker.origin);
    first.reservation.release();
    const third = p.place({ role: "generation", requestKey: 3n, exclude: undefined, avoid: [] });
    expect(third.worker.origin).toBe(first.worker.origin);
  });

  test("load_balancing with use_tokens picks the worker with the fewest prompt tokens in flight, not the fewest requests", () => {
    const p = new Placement({
      contextServers: ["http://c:1"],
      generationServers: ["http://a:1", "http://b:1"],
      contextRouter: "round_robin",
      generationRouter: "load_balancing",
      routerOptions: { context: {}, generation: { useTokens: true } },
    });
    for (const role of ["context", "generation"] as const) for (const w of p.pool.all(role)) w.ready = true;
    const long = p.place({ role: "generation", requestKey: 1n, exclude: undefined, avoid: [], routing: prompt(1000) });
    const shorts = [2n, 3n, 4n].map(
      (key) => p.place({ role: "generation", requestKey: key, exclude: undefined, avoid: [], routing: prompt(10) }).worker.origin,
    );
    // Three short prompts (30 tokens) weigh less than one long one: all go beside it.
    expect(shorts.every((origin) => origin !== long.worker.origin)).toBe(true);
  });

  test("a URL in both lists is never paired with itself", () => {
    const p = placement("round_robin", ["http://m:1"], ["http://m:1", "http://g:1"]);
    for (let i = 0; i < 4; i++) {
      expect(p.place({ role: "generation", requestKey: 1n, exclude: "http://m:1", avoid: [] }).worker.origin).toBe("http://g:1");
    }
  });

  test("the only worker of a role is not paired with itself: placement fails instead", () => {
    const p = placement("round_robin", ["http://m:1"], ["http://m:1"]);
    expect(() => p.place({ role: "generation", requestKey: 1n, exclude: "http://m:1", avoid: [] })).toThrow("No generation worker");
  });

  test("a failed worker is avoided while another is ready, and used when it is the only one", () => {
    const p = placement("round_robin", ["http://a:1", "http://b:1"], ["http://g:1"]);
    for (let i = 0; i < 3; i++) {
      expect(p.place({ role: "context", requestKey: 1n, exclude: undefined, avoid: ["http://a:1"] }).worker.origin).toBe("http://b:1");
    }
    const only = placement("round_robin", ["http://a:1"], ["http://g:1"]);
    expect(only.place({ role: "context", requestKey: 1n, exclude: undefined, avoid: ["http://a:1"] }).worker.origin).toBe("http://a:1");
  });

  test("releasing a reservation twice counts once", () => {
    const p = placement("load_balancing", ["http://a:1"], ["http://g:1"]);
    const placed = p.place({ role: "context", requestKey: 1n, exclude: undefined, avoid: [] });
    p.place({ role: "context", requestKey: 2n, exclude: undefined, avoid: [] });
    placed.reservation.release();
    placed.reservation.release();
    expect(p.table.load("context", "http://a:1")).toBe(1);
    expect(p.table.active()).toBe(1);
  });

  test("round_robin and load_balancing choose as before when given routing information, and know no cached tokens", () => {
    const routing = { conversationId: "c", promptText: "a prompt of some length", promptTokenIds: undefined };
    for (const router of ["round_robin", "load_balancing"] as const) {
      const p = placement(router, ["http://a:1", "http://b:1"], ["http://g:1"]);
      const picks = [1n, 2n, 3n].map((key) => {
        const placed = p.place({ role: "context", requestKey: key, exclude: undefined, avoid: [], routing });
        expect(placed).toMatchObject({ matchedTokens: 0, totalTokens: 6 });
        return placed.worker.origin;
      });
      expect(picks).toEqual(["http://a:1", "http://b:1", "http://a:1"]);
    }
  });

  test("a reservation carries the request's content weight until it is released", () => {
    const p = placement("round_robin", ["http://a:1"], ["http://g:1"]);
    const routing = { conversationId: undefined, promptText: "", promptTokenIds: [1, 2, 3, 4, 5, 6, 7] };
    const placed = p.place({ role: "context", requestKey: 1n, exclude: undefined, avoid: [], routing });
    expect(p.table.weight("context", "http://a:1")).toBe(7);
    placed.reservation.release();
    placed.reservation.release();
    expect(p.table.weight("context", "http://a:1")).toBe(0);
  });

  test("the conversation router keeps a conversation on its worker through Placement", () => {
    const p = new Placement({
      contextServers: ["http://a:1", "http://b:1"],
      generationServers: ["http://g:1"],
      contextRouter: "conversation",
      generationRouter: "round_robin",
      routerOptions: { context: { maxSessions: 10 }, generation: {} },
      nodeId: 1,
    });
    for (const w of p.pool.all("context")) w.ready = true;
    const first = p.place({ role: "context", requestKey: 1n, exclude: undefined, avoid: [], routing: turn(1) });
    for (let n = 2; n < 5; n++) {
      expect(p.place({ role: "context", requestKey: BigInt(n), exclude: undefined, avoid: [], routing: turn(n) }).worker.origin).toBe(
        first.worker.origin,
      );
    }
  });

  test("finished on a worker the pool no longer lists settles without effect", async () => {
    const p = placement("round_robin", ["http://a:1"], ["http://g:1"]);
    await p.finished("context", "http://gone:1", undefined, true);
    await p.finished("generation", "http://g:1", undefined, false);
  });

  test("no ready worker is a 503", () => {
    const p = new Placement({
      contextServers: ["http://a:1"],
      generationServers: ["http://g:1"],
      contextRouter: "round_robin",
      generationRouter: "round_robin",
    });
    expect(() => p.place({ role: "context", requestKey: 1n, exclude: undefined, avoid: [] })).toThrow("No context worker");
  });
});
