import { describe, expect, test } from "bun:test";
import { checkGrammar, readEvents, type SeenEvent } from "../src/dialects/anthropic-test-events.ts";
import { isJsonObject } from "../src/json/json.ts";
import { eventually, startCluster } from "./support/cluster.ts";

const SCHEDULES = ["context_first", "generation_first"] as const;
const message = (text: string, extra: object = {}): object => ({
  model: "emulated-model",
  max_tokens: 8,
  messages: [{ role: "user", content: text }],
  ...extra,
});

async function events(response: Response): Promise<SeenEvent[]> {
  const all = readEvents(new Uint8Array(await response.arrayBuffer()));
  checkGrammar(all);
  return all;
}

describe.each(SCHEDULES)("%s: /v1/messages", (schedule) => {
  test("a fast non-streamed request is converted both ways", async () => {
    await using cluster = await startCluster({ config: { schedule } });
    const response = await cluster.post("/v1/messages?beta=true", message("hello", { system: "be brief" }));
    expect(response.status).toBe(200);
    const body = (await response.json()) as { type: string; role: string; content: { type: string; text: string }[]; stop_reason: string };
    expect(body.type).toBe("message");
    expect(body.content[0]!.type).toBe("text");
    expect(body.stop_reason).toBe("max_tokens");
    const ctx = cluster.contexts[0]!.requests.find((r) => r.phase === "context")!;
    expect(isJsonObject(ctx.body) && ctx.body["max_completion_tokens"]).toBe(8);
  });

  test("a fast streamed request is reframed into Anthropic events", async () => {
    await using cluster = await startCluster({ config: { schedule } });
    const response = await cluster.post("/v1/messages", message("hello", { stream: true }));
    const seen = await events(response);
    expect(seen.filter((e) => e.event === "message_start")).toHaveLength(1);
    expect(seen.at(-1)!.event).toBe("message_stop");
  });

  test.each([
    [400, 400, "invalid_request_error"],
    [413, 413, "request_too_large"],
    [429, 429, "rate_limit_error"],
    [500, 500, "api_error"],
    [503, 529, "overloaded_error"],
  ])("a fast worker %p is an Anthropic %p %s", async (status, expected, type) => {
    await using cluster = await startCluster({ config: { schedule, maxRetries: 0 } });
    const response = await cluster.post("/v1/messages", message(`[[emu ctx.reject=${status}]]`, { stream: true }));
    expect(response.status).toBe(expected);
    const body = (await response.json()) as { type: string; error: { type: string; message: string } };
    expect(body.type).toBe("error");
    expect(body.error.type).toBe(type);
  });

  test.each([400, 503])("a late %p ends the started stream with an error event and no message_stop", async (status) => {
    await using cluster = await startCluster({ config: { schedule, maxRetries: 0, streamStartWaitMs: 50, keepaliveIntervalMs: 100 } });
    const response = await cluster.post("/v1/messages", message(`[[emu ctx.reject=${status} ctx.reject_after_ms=300]]`, { stream: true }));
    expect(response.status).toBe(200);
    const seen = await events(response);
    expect(seen[0]!.event).toBe("ping");
    expect(seen.at(-1)!.event).toBe("error");
    // The in-band error carries the type the same failure has before the stream starts.
    expect((seen.at(-1)!.data as { error: { type: string } }).error.type).toBe(
      status === 503 ? "overloaded_error" : "invalid_request_error",
    );
    expect(seen.some((e) => e.event === "message_stop")).toBe(false);
  });

  test("a slow prefill starts the stream at once and pings until message_start", async () => {
    await using cluster = await startCluster({ config: { schedule, streamStartWaitMs: 100, keepaliveIntervalMs: 150 } });
    const started = performance.now();
    const response = await cluster.post("/v1/messages", message("[[emu ctx.prefill_ms=1200]] hi", { stream: true }));
    expect(response.status).toBe(200);
    expect(performance.now() - started).toBeLessThan(800);
    const seen = await events(response);
    const firstStart = seen.findIndex((e) => e.event === "message_start");
    expect(firstStart).toBeGreaterThanOrEqual(5);
    expect(seen.slice(0, firstStart).every((e) => e.event === "ping")).toBe(true);
  });

  test("a client leaving after the stream started cancels both legs", async () => {
    await using cluster = await startCluster({ config: { schedule, streamStartWaitMs: 50 } });
    const client = new AbortController();
    const response = await cluster.post("/v1/messages", message("[[emu ctx.prefill_ms=5000]]", { stream: true }), {
      signal: client.signal,
    });
    await response.body!.getReader().read();
    client.abort();
    await cluster.contexts[0]!.waitFor((r) => r.phase === "context" && r.status === "aborted");
    if (schedule === "generation_first") await cluster.generations[0]!.waitFor((r) => r.phase === "generation" && r.status === "aborted");
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
  });

  test("a client leaving before the stream started cancels both legs", async () => {
    await using cluster = await startCluster({ config: { schedule, streamStartWaitMs: 10_000 } });
    const client = new AbortController();
    const pending = cluster.post("/v1/messages", message("[[emu ctx.prefill_ms=5000]]", { stream: true }), { signal: client.signal });
    pending.catch(() => {});
    await cluster.contexts[0]!.waitFor((r) => r.phase === "context");
    client.abort();
    await cluster.contexts[0]!.waitFor((r) => r.phase === "context" && r.status === "aborted");
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
  });
});

describe("/v1/messages details", () => {
  test("tool use comes back as tool_use blocks with stop_reason tool_use", async () => {
    await using cluster = await startCluster();
    const tools = [{ name: "f", description: "d", input_schema: { type: "object", properties: {} } }];
    const response = await cluster.post("/v1/messages", message("[[emu tools=2]] call", { tools, stream: true, max_tokens: 64 }));
    const seen = await events(response);
    const starts = seen.filter((e) => e.event === "content_block_start").map((e) => (e.data["content_block"] as { type: string }).type);
    expect(starts.filter((t) => t === "tool_use")).toHaveLength(2);
    const delta = seen.find((e) => e.event === "message_delta")!.data["delta"] as { stop_reason: string };
    expect(delta.stop_reason).toBe("tool_use");
  });

  test("a conversion error is a 400 in the Anthropic envelope and reaches no worker", async () => {
    await using cluster = await startCluster();
    const response = await cluster.post(
      "/v1/messages",
      message("x", { tool_choice: { type: "any" }, tools: [{ name: "f", input_schema: {} }] }),
    );
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { type: string } }).error.type).toBe("invalid_request_error");
    expect(cluster.contexts[0]!.requests.filter((r) => r.method === "POST")).toHaveLength(0);
  });

  test("count_tokens is answered by a context worker", async () => {
    await using cluster = await startCluster();
    const response = await cluster.post("/v1/messages/count_tokens", message("one two three"));
    expect(response.status).toBe(200);
    expect(((await response.json()) as { input_tokens: number }).input_tokens).toBeGreaterThan(0);
  });

  test("Claude Code's 80 KB request is accepted as it is", async () => {
    await using cluster = await startCluster();
    const body = await Bun.file(`${import.meta.dir}/fixtures/anthropic/claude-code-request.json`).json();
    const response = await cluster.post(
      "/v1/messages?beta=true",
      { ...(body as object), stream: true },
      {
        headers: {
          "content-type": "application/json",
          "anthropic-version": "2023-06-01",
          "anthropic-beta": "x",
          "x-claude-code-session-id": "s",
        },
      },
    );
    expect(response.status).toBe(200);
    await events(response);
  });
});
