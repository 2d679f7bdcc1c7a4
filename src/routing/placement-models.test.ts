import { describe, expect, test } from "bun:test";
import { Placement } from "./placement.ts";
import type { RoutingRequest } from "./routing-request.ts";

/** Context workers a1, a2 serve model-a, b1 model-b; one generation worker serves both. */
function mixed(router: "round_robin" | "conversation"): Placement {
  const p = new Placement({
    contextServers: ["http://a1:1", "http://a2:1", "http://b1:1"],
    generationServers: ["http://g:1"],
    contextRouter: router,
    generationRouter: "round_robin",
    modelAliases: [{ from: "gpt-*", to: "model-b" }],
  });
  p.pool.learnModels("http://a1:1", ["model-a"]);
  p.pool.learnModels("http://a2:1", ["model-a"]);
  p.pool.learnModels("http://b1:1", ["model-b"]);
  p.pool.learnModels("http://g:1", ["model-a", "model-b"]);
  for (const role of ["context", "generation"] as const) for (const w of p.pool.all(role)) w.ready = true;
  return p;
}

function request(model: string | undefined, conversationId?: string): RoutingRequest {
  return { conversationId, promptText: "hello there", promptTokenIds: undefined, model };
}

function pick(p: Placement, routing: RoutingRequest): string {
  const placed = p.place({ role: "context", requestKey: 1n, exclude: undefined, avoid: [], routing });
  placed.reservation.release();
  return placed.worker.origin;
}

describe("placement in a fleet of several models", () => {
  test("round_robin keeps one cursor per model: model-b's requests do not move model-a's turn", () => {
    const p = mixed("round_robin");
    const picks = [
      pick(p, request("model-a")),
      pick(p, request("model-b")),
      pick(p, request("gpt-4o")),
      pick(p, request("model-a")),
      pick(p, request("model-a")),
    ];
    expect(picks).toEqual(["http://a1:1", "http://b1:1", "http://b1:1", "http://a2:1", "http://a1:1"]);
  });

  test("round_robin's turns are per model: requests of two models in alternation still cycle through each model's workers", () => {
    const p = mixed("round_robin");
    const picks = ["model-a", "model-b", "model-a", "model-b", "model-a", "model-b", "model-a"].map((model) => pick(p, request(model)));
    expect(picks).toEqual(["http://a1:1", "http://b1:1", "http://a2:1", "http://b1:1", "http://a1:1", "http://b1:1", "http://a2:1"]);
  });

  test("a conversation id is sticky within its model, and the same id under another model is another conversation", () => {
    const p = mixed("conversation");
    const first = pick(p, request("model-a", "c1"));
    expect(pick(p, request("model-a", "c1"))).toBe(first);
    expect(pick(p, request("model-b", "c1"))).toBe("http://b1:1");
    expect(pick(p, request("model-a", "c1"))).toBe(first);
  });

  test("a model no worker serves is a 404 MODEL_NOT_FOUND, a served one without ready workers a 503", () => {
    const p = mixed("round_robin");
    expect(() => pick(p, request("model-c"))).toThrow(expect.objectContaining({ code: "MODEL_NOT_FOUND", status: 404 }));
    for (const w of p.pool.all("context")) if (w.origin === "http://b1:1") w.ready = false;
    expect(() => pick(p, request("model-b"))).toThrow(expect.objectContaining({ code: "NO_WORKER", status: 503 }));
    expect(p.table.active()).toBe(0);
  });

  test("a worker that rejoins serving another model moves to that model's pool", () => {
    const p = mixed("round_robin");
    p.pool.learnModels("http://a2:1", ["model-b"]);
    expect(new Set([1, 2, 3, 4].map(() => pick(p, request("model-b"))))).toEqual(new Set(["http://b1:1", "http://a2:1"]));
    expect(new Set([1, 2, 3].map(() => pick(p, request("model-a"))))).toEqual(new Set(["http://a1:1"]));
  });

  test("while every worker serves one model, requests naming any model are placed", () => {
    const p = new Placement({
      contextServers: ["http://c:1"],
      generationServers: ["http://g:1"],
      contextRouter: "round_robin",
      generationRouter: "round_robin",
    });
    p.pool.learnModels("http://c:1", ["only"]);
    for (const role of ["context", "generation"] as const) for (const w of p.pool.all(role)) w.ready = true;
    expect(pick(p, request("whatever"))).toBe("http://c:1");
    expect(pick(p, request(undefined))).toBe("http://c:1");
  });
});
