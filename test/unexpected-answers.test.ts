import { describe, expect, test } from "bun:test";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { eventually, startCluster } from "./support/cluster.ts";
import { fakeWorker } from "./support/fake-worker.ts";

/** Workers that answer what a trtllm-serve worker should not. */
const oddWorker = fakeWorker;

const chat = (stream: boolean): object => ({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 4, stream });

describe("unexpected worker answers", () => {
  test("a streamed request answered with an HTTP error carries its status and at most 2,048 bytes of its body", async () => {
    const big = JSON.stringify({ object: "error", message: "overloaded", padding: "x".repeat(10_000) });
    using gen = oddWorker(() => new Response(big, { status: 503, headers: { "content-type": "application/json" } }));
    await using cluster = await startCluster({ config: { generationServers: [gen.url.origin], maxRetries: 0 } });
    const response = await cluster.post("/v1/chat/completions", chat(true));
    expect(response.status).toBe(503);
    const body = await response.arrayBuffer();
    expect(body.byteLength).toBe(2048);
  });

  test("a streamed request answered with a non-SSE body is an error carrying that body's start", async () => {
    using gen = oddWorker(() => new Response("<html>proxy page</html>", { status: 200, headers: { "content-type": "text/html" } }));
    await using cluster = await startCluster({ config: { generationServers: [gen.url.origin], maxRetries: 0 } });
    const response = await cluster.post("/v1/chat/completions", chat(true));
    expect(response.status).toBe(502);
    expect(await response.text()).toContain("proxy page");
  });

  test("a non-streamed request answered with SSE is an error", async () => {
    using gen = oddWorker(() => new Response("data: {}\n\n", { headers: { "content-type": "text/event-stream" } }));
    await using cluster = await startCluster({ config: { generationServers: [gen.url.origin], maxRetries: 0 } });
    const response = await cluster.post("/v1/chat/completions", chat(false));
    expect(response.status).toBe(502);
    expect(((await response.json()) as { message: string }).message).toContain("event stream");
  });

  test("a context answer without hand-off parameters is refused with a clear error", async () => {
    using ctx = oddWorker(() => Response.json({ id: "x", choices: [{ index: 0, message: { content: "a" }, finish_reason: "length" }] }));
    await using cluster = await startCluster({ config: { contextServers: [ctx.url.origin], maxRetries: 0 } });
    const response = await cluster.post("/v1/chat/completions", chat(false));
    expect(response.status).toBe(502);
    expect(((await response.json()) as { message: string }).message).toContain("did not return disaggregated params");
  });

  test("error answers never name a worker's address", async () => {
    using gen = oddWorker(() => new Response(`upstream at ${gen.url.origin} exploded`, { status: 500 }));
    await using cluster = await startCluster({ config: { generationServers: [gen.url.origin], maxRetries: 0 } });
    const response = await cluster.post("/v1/chat/completions", chat(false));
    const text = await response.text();
    expect(response.status).toBe(500);
    expect(text).not.toContain("127.0.0.1");
  });
});

describe("generation_first: a finished generation answer is kept", () => {
  test("a non-streamed generation answer that completed is returned even when the context leg fails after it", async () => {
    // This context worker hands the KV over at once, then fails its own answer later.
    let handedOver = 0;
    using ctx: Bun.Server<undefined> = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 0,
      async fetch(request): Promise<Response> {
        const path = new URL(request.url).pathname;
        if (path === "/health") return new Response(null, { status: 200 });
        if (path === "/server_info")
          return Response.json({ disaggregated_params: { ctx_info_endpoint: [ctx.url.origin], ctx_dp_rank: 0 } });
        if (path.startsWith("/emulator/kv/")) {
          handedOver++;
          return Response.json({ first_gen_tokens: [11], prompt_token_ids: [1, 2, 3] });
        }
        await Bun.sleep(300);
        return Response.json({ object: "error", message: "context fell over", code: 500 }, { status: 500 });
      },
    });
    await using gen = startEmulatedWorker({ role: "generation" });
    await using cluster = await startCluster({
      config: { schedule: "generation_first", contextServers: [ctx.url.origin], generationServers: [gen.url], maxRetries: 0 },
    });
    const response = await cluster.post("/v1/chat/completions", chat(false));
    expect(handedOver).toBe(1);
    expect(response.status).toBe(200);
    expect(((await response.json()) as { object: string }).object).toBe("chat.completion");
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
  });
});

describe("Bun's idle timeout", () => {
  test("a streamed request silent for longer than the server idle timeout survives", async () => {
    await using cluster = await startCluster({ idleTimeoutS: 1, config: { streamStartWaitMs: 10_000, keepaliveIntervalMs: 0 } });
    const slow = await cluster.post("/v1/chat/completions", {
      model: "m",
      messages: [{ role: "user", content: "[[emu ctx.prefill_ms=2500]]" }],
      max_tokens: 3,
      stream: true,
    });
    expect(slow.status).toBe(200);
    expect(await slow.text()).toContain("[DONE]");
  }, 10_000);
});
