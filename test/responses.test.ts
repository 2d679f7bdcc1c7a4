import { describe, expect, test } from "bun:test";
import { isJsonObject } from "../src/json/json.ts";
import { eventually, startCluster } from "./support/cluster.ts";
import { parseSseEvents, responseIds, sequenceNumbers } from "./support/sse.ts";

const SCHEDULES = ["context_first", "generation_first"] as const;
const NAME = /^resp_(\d+)_[0-9a-f]{16}$/;
const request = (input: string, extra: object = {}): object => ({ model: "emulated-model", input, max_output_tokens: 6, ...extra });

describe.each(SCHEDULES)("%s: /v1/responses", (schedule) => {
  test("a non-streamed request is answered under the name resp_<disagg_request_id>_<16 hex>", async () => {
    await using cluster = await startCluster({ config: { schedule } });
    const response = await cluster.post("/v1/responses", request("hello"));
    expect(response.status).toBe(200);
    const body = (await response.json()) as { id: string; status: string };
    const match = NAME.exec(body.id);
    expect(match).not.toBeNull();
    expect(response.headers.get("x-trtllm-engine-request-id")).toBe(match![1]!);
    const ctx = cluster.contexts[0]!.requests.find((r) => r.phase === "context")!;
    const gen = cluster.generations[0]!.requests.find((r) => r.phase === "generation")!;
    for (const leg of [ctx, gen]) {
      expect(isJsonObject(leg.body) && leg.body["request_id"]).toBe(body.id);
      expect(isJsonObject(leg.body) && leg.body["store"]).toBe(false);
    }
  });

  test("a pipeline answered within the start wait is relayed as the worker streams it", async () => {
    await using cluster = await startCluster({ config: { schedule } });
    const response = await cluster.post("/v1/responses", request("hello", { stream: true }));
    const events = parseSseEvents(await response.text());
    expect(events[0]!.event).toBe("response.created");
    expect(events.at(-1)!.event).toBe("response.completed");
    expect(sequenceNumbers(events)).toEqual(events.map((_, i) => i));
    expect(responseIds(events).size).toBe(1);
  });

  test("a slow pipeline opens at once, keeps alive with response.in_progress, and relays one gap-free sequence", async () => {
    await using cluster = await startCluster({
      contexts: [{ responsesKeepaliveMs: 100 }],
      generations: [{ responsesKeepaliveMs: 100 }],
      config: { schedule, streamStartWaitMs: 100, keepaliveIntervalMs: 200 },
    });
    const started = performance.now();
    const response = await cluster.post("/v1/responses", request("[[emu ctx.prefill_ms=1500]] hi", { stream: true }));
    expect(response.status).toBe(200);
    expect(performance.now() - started).toBeLessThan(1000);
    const events = parseSseEvents(await response.text());
    expect(events[0]!.event).toBe("response.created");
    expect(events[1]!.event).toBe("response.in_progress");
    expect(events.filter((e) => e.event === "response.created")).toHaveLength(1);
    expect(events.filter((e) => e.event === "response.in_progress").length).toBeGreaterThanOrEqual(5);
    expect(events.at(-1)!.event).toBe("response.completed");
    expect(sequenceNumbers(events)).toEqual(events.map((_, i) => i));
    const ids = responseIds(events);
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(NAME);
    const text = events
      .filter((e) => e.event === "response.output_text.delta")
      .map((e) => e.data["delta"])
      .join("");
    expect(text.trim().length).toBeGreaterThan(0);
  });

  test("a failure after the opening ends the stream with error and response.failed", async () => {
    await using cluster = await startCluster({ config: { schedule, maxRetries: 0, streamStartWaitMs: 50 } });
    const response = await cluster.post("/v1/responses", request("[[emu ctx.reject=503 ctx.reject_after_ms=300]]", { stream: true }));
    expect(response.status).toBe(200);
    const events = parseSseEvents(await response.text());
    const tail = events.slice(-2);
    expect(tail.map((e) => e.event)).toEqual(["error", "response.failed"]);
    expect(tail[0]!.data["code"]).toBe("upstream_error");
    const failed = tail[1]!.data["response"] as { id: string; status: string; error: { code: string } };
    expect(failed.status).toBe("failed");
    expect(failed.error.code).toBe("server_error");
    expect(failed.id).toBe((events[0]!.data["response"] as { id: string }).id);
    expect(sequenceNumbers(events)).toEqual(events.map((_, i) => i));
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
  });

  test("a failure within the start wait keeps its HTTP status", async () => {
    await using cluster = await startCluster({ config: { schedule, maxRetries: 0 } });
    const response = await cluster.post("/v1/responses", request("[[emu ctx.reject=400]]", { stream: true }));
    expect(response.status).toBe(400);
  });

  test("a client leaving after the opening cancels both legs and releases reservations", async () => {
    await using cluster = await startCluster({ config: { schedule, streamStartWaitMs: 50 } });
    const client = new AbortController();
    const response = await cluster.post("/v1/responses", request("[[emu ctx.prefill_ms=5000]]", { stream: true }), {
      signal: client.signal,
    });
    await response.body!.getReader().read();
    client.abort();
    await cluster.contexts[0]!.waitFor((r) => r.phase === "context" && r.status === "aborted");
    if (schedule === "generation_first") await cluster.generations[0]!.waitFor((r) => r.phase === "generation" && r.status === "aborted");
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
  });
});

describe("/v1/responses naming and input", () => {
  test("a client-set request_id is kept", async () => {
    await using cluster = await startCluster();
    const response = await cluster.post("/v1/responses", request("hello", { request_id: "resp_mine" }));
    expect(((await response.json()) as { id: string }).id).toBe("resp_mine");
  });

  test("a context retry that gets a new id keeps the name", async () => {
    await using cluster = await startCluster({ contexts: [{ faults: { rejectStatus: 503 } }, {}] });
    const response = await cluster.post("/v1/responses", request("hello"));
    const id = ((await response.json()) as { id: string }).id;
    const attempts = [...cluster.contexts[0]!.requests, ...cluster.contexts[1]!.requests].filter((r) => r.phase === "context");
    expect(attempts).toHaveLength(2);
    expect(attempts[0]!.disaggRequestId).not.toBe(attempts[1]!.disaggRequestId);
    for (const attempt of attempts) expect(isJsonObject(attempt.body) && attempt.body["request_id"]).toBe(id);
  });

  test("previous_response_id gets a clear 400 and reaches no worker", async () => {
    await using cluster = await startCluster();
    const response = await cluster.post("/v1/responses", request("hello", { previous_response_id: "resp_1" }));
    expect(response.status).toBe(400);
    expect(((await response.json()) as { message: string }).message).toContain("not stored");
    expect(cluster.contexts[0]!.requests.filter((r) => r.method === "POST")).toHaveLength(0);
  });

  test("a request whose opening cannot be built from it waits for its pipeline", async () => {
    await using cluster = await startCluster({ config: { streamStartWaitMs: 50 } });
    const started = performance.now();
    const response = await cluster.post("/v1/responses", request("[[emu ctx.prefill_ms=400]]", { stream: true, temperature: 7 }));
    expect(performance.now() - started).toBeGreaterThanOrEqual(380);
    await response.text();
  });

  test("fields the proxy does not interpret pass to the workers untouched", async () => {
    await using cluster = await startCluster();
    const extra = {
      client_metadata: { a: 1 },
      prompt_cache_key: "k",
      include: ["reasoning.encrypted_content"],
      reasoning: { effort: "low" },
      tools: [{ type: "web_search" }, { type: "function", name: "f", parameters: {} }],
    };
    await (await cluster.post("/v1/responses", request("hello", extra))).text();
    const ctx = cluster.contexts[0]!.requests.find((r) => r.phase === "context")!;
    for (const [key, value] of Object.entries(extra)) expect(isJsonObject(ctx.body) && ctx.body[key]).toEqual(value);
  });
});
