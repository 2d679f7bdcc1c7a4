import { describe, expect, test } from "bun:test";
import { Placement } from "./placement.ts";

function placement(router: "round_robin" | "load_balancing", ctx: string[], gen: string[]): Placement {
  const p = new Placement({ contextServers: ctx, generationServers: gen, contextRouter: router, generationRouter: router });
  for (const role of ["context", "generation"] as const) for (const w of p.pool.all(role)) w.ready = true;
  return p;
}

describe("Placement", () => {
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

  test("no ready worker is a 503", () => {
    const p = new Placement({ contextServers: ["http://a:1"], generationServers: ["http://g:1"], contextRouter: "round_robin", generationRouter: "round_robin" });
    expect(() => p.place({ role: "context", requestKey: 1n, exclude: undefined, avoid: [] })).toThrow("No context worker");
  });
});
