import { describe, expect, test } from "bun:test";
import { isJsonObject } from "../src/json/json.ts";
import { startCluster } from "./support/cluster.ts";

const CLIENT_TRACE = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

describe.each(["context_first", "generation_first"] as const)("%s: what both legs carry", (schedule) => {
  test("the client's trace reaches both legs with one trace id and a distinct span id each", async () => {
    await using cluster = await startCluster({ config: { schedule } });
    const response = await cluster.post(
      "/v1/chat/completions",
      { model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 3 },
      {
        headers: { "content-type": "application/json", traceparent: CLIENT_TRACE, tracestate: "vendor=1" },
      },
    );
    expect(response.status).toBe(200);
    const ctx = cluster.contexts[0]!.requests.find((r) => r.phase === "context")!;
    const gen = cluster.generations[0]!.requests.find((r) => r.phase === "generation")!;
    const [, ctxTrace, ctxSpan] = ctx.headers["traceparent"]!.split("-");
    const [, genTrace, genSpan] = gen.headers["traceparent"]!.split("-");
    expect(ctxTrace).toBe("0af7651916cd43dd8448eb211c80319c");
    expect(genTrace).toBe(ctxTrace);
    expect(ctxSpan).not.toBe(genSpan);
    expect(ctxSpan).not.toBe("b7ad6b7169203331");
    expect(gen.headers["tracestate"]).toBe("vendor=1");
  });

  test("a session header names the conversation in both legs' bodies", async () => {
    await using cluster = await startCluster({ config: { schedule } });
    await cluster.post(
      "/v1/messages?beta=true",
      { model: "m", max_tokens: 3, messages: [{ role: "user", content: "hi" }] },
      {
        headers: { "content-type": "application/json", "x-claude-code-session-id": "session-42" },
      },
    );
    for (const leg of [
      cluster.contexts[0]!.requests.find((r) => r.phase === "context")!,
      cluster.generations[0]!.requests.find((r) => r.phase === "generation")!,
    ]) {
      expect(isJsonObject(leg.body) && leg.body["conversation_params"]).toEqual({ conversation_id: "session-42" });
    }
  });

  test("the client's Authorization header never reaches a worker", async () => {
    await using cluster = await startCluster({ config: { schedule } });
    await cluster.post(
      "/v1/chat/completions",
      { model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 3 },
      {
        headers: { "content-type": "application/json", authorization: "Bearer client-secret" },
      },
    );
    const requests = [...cluster.contexts, ...cluster.generations].flatMap((worker) => worker.requests);
    // The context and the generation leg at least: the loop has something to check.
    expect(requests.filter((r) => r.phase === "context" || r.phase === "generation").length).toBeGreaterThanOrEqual(2);
    for (const r of requests) expect(JSON.stringify(r.headers)).not.toContain("client-secret");
  });
});
