import { describe, expect, test } from "bun:test";
import { isJsonObject } from "../src/json.ts";
import { eventually, startCluster } from "./support/cluster.ts";

const history = (turns: number): object[] =>
  Array.from({ length: turns }, (_, i) => ({ role: i % 2 === 0 ? "user" : "assistant", content: `turn ${i} ${"about the long agent task ".repeat(40)}` }));

const chat = (messages: object[], extra: object = {}): object => ({ model: "m", messages, max_tokens: 3, ...extra });

describe("conversation-aware placement through the proxy", () => {
  test("turns of one conversation stick to the same context worker", async () => {
    await using cluster = await startCluster({ contexts: [{}, {}, {}], config: { contextRouter: "conversation" } });
    for (let turn = 1; turn <= 4; turn++) {
      const response = await cluster.post("/v1/chat/completions", chat(history(turn)), { headers: { "content-type": "application/json", "x-session-id": "agent-7" } });
      expect(response.status).toBe(200);
    }
    const served = cluster.contexts.map((w) => w.requests.filter((r) => r.phase === "context").length);
    expect(served.toSorted((a, b) => a - b)).toEqual([0, 0, 4]);
  });

  test("conditional disaggregation skips the context phase when the generation worker holds the prompt", async () => {
    await using cluster = await startCluster({
      generations: [{}, {}],
      config: { generationRouter: "conversation", conditionalDisagg: { maxLocalPrefillLength: 200 } },
    });
    const first = await cluster.post("/v1/chat/completions", chat(history(3)));
    expect(first.status).toBe(200);
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
    const second = await cluster.post("/v1/chat/completions", chat([...history(3), { role: "user", content: "and one more thing" }]));
    expect(second.status).toBe(200);
    expect(cluster.contexts[0]!.requests.filter((r) => r.phase === "context")).toHaveLength(1);
    const alone = [...cluster.generations[0]!.requests, ...cluster.generations[1]!.requests].filter((r) => r.phase === "aggregated");
    expect(alone).toHaveLength(1);
    expect(isJsonObject(alone[0]!.body) && alone[0]!.body["disaggregated_params"]).toBeUndefined();
    expect(second.headers.get("x-trtllm-engine-request-id")).not.toBeNull();
  });

  test("a reserved generation worker is released when the context phase fails, finishes early or the client leaves", async () => {
    await using cluster = await startCluster({
      config: { generationRouter: "conversation", conditionalDisagg: { maxLocalPrefillLength: 0 }, maxRetries: 0 },
    });
    const table = cluster.proxy.app.placement.table;
    expect((await cluster.post("/v1/chat/completions", chat([{ role: "user", content: "[[emu ctx.reject=503]]" }]))).status).toBe(503);
    expect(table.active()).toBe(0);
    const early = await cluster.post("/v1/chat/completions", chat([{ role: "user", content: "short" }], { max_tokens: 1 }));
    expect(early.status).toBe(200);
    expect(table.active()).toBe(0);
    const client = new AbortController();
    const leaving = cluster.post("/v1/chat/completions", chat([{ role: "user", content: "[[emu ctx.prefill_ms=3000]]" }]), { signal: client.signal });
    leaving.catch(() => {});
    await cluster.contexts[0]!.waitFor((r) => r.phase === "context" && r.status === "running");
    expect(table.active()).toBe(2);
    client.abort();
    await eventually(() => table.active() === 0);
    expect(table.snapshot()).toEqual({});
  });
});
