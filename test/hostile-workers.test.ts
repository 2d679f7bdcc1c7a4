import { describe, expect, test } from "bun:test";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { isJsonObject } from "../src/json/json.ts";
import { eventually, startCluster } from "./support/cluster.ts";
import { fakeWorker } from "./support/fake-worker.ts";

/** A context worker with a fixed answer body, standing in for a broken worker. */
function brokenContext(body: () => string | Uint8Array, contentType = "application/json"): Bun.Server<undefined> {
  return fakeWorker(() => new Response(body(), { headers: { "content-type": contentType } }));
}

const chat = { model: "m", messages: [{ role: "user", content: "x" }], max_tokens: 3 };

describe("hostile bytes from workers", () => {
  const cases: [string, () => string | Uint8Array, RegExp][] = [
    ["an answer that is not JSON", () => "<html>oops</html>", /not valid JSON/],
    ["an answer that is not UTF-8", () => new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), /not valid UTF-8/],
    ["an answer that is a JSON list", () => "[1,2,3]", /not a JSON object/],
    [
      "an answer missing its hand-off",
      () => JSON.stringify({ choices: [{ index: 0, finish_reason: "length", message: { content: "a" } }] }),
      /disaggregated params/,
    ],
    ["an answer with two choices", () => JSON.stringify({ choices: [{}, {}] }), /2 choices/],
  ];
  test.each(cases)("%s gets a clear 502 and the leg is closed", async (_name, body, message) => {
    using ctx = brokenContext(body);
    await using cluster = await startCluster({ config: { contextServers: [ctx.url.origin], maxRetries: 0 } });
    const response = await cluster.post("/v1/chat/completions", chat);
    expect(response.status).toBe(502);
    const envelope = (await response.json()) as { object: string; message: string };
    expect(envelope.object).toBe("error");
    expect(envelope.message).toMatch(message);
    expect(JSON.stringify(envelope)).not.toContain("127.0.0.1");
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
  });

  test("an answer larger than --max-answer-bytes is refused without being read whole", async () => {
    const huge = `{"pad":"${"x".repeat(300_000)}"}`;
    using ctx = brokenContext(() => huge);
    await using cluster = await startCluster({ config: { contextServers: [ctx.url.origin], maxRetries: 0, maxAnswerBytes: 100_000 } });
    const response = await cluster.post("/v1/chat/completions", chat);
    expect(response.status).toBe(502);
    expect(((await response.json()) as { message: string }).message).toContain("larger than 100000 bytes");
  });
});

/** A generation worker that streams the given bytes as its SSE answer. */
function brokenGeneration(chunks: () => (string | Uint8Array)[]): Bun.Server<undefined> {
  return fakeWorker(() => {
    const parts = chunks();
    const body = new ReadableStream({
      start(controller) {
        for (const part of parts) controller.enqueue(typeof part === "string" ? new TextEncoder().encode(part) : part);
        controller.close();
      },
    });
    return new Response(body, { headers: { "content-type": "text/event-stream" } });
  });
}

describe("hostile streams from workers", () => {
  test("a line that never ends is cut at --max-sse-event-bytes with an in-band error", async () => {
    using gen = brokenGeneration(() => [`data: {"pad":"${"x".repeat(200_000)}`]);
    await using cluster = await startCluster({
      config: { generationServers: [gen.url.origin], maxSseEventBytes: 65_536, streamStartWaitMs: 1000 },
    });
    const response = await cluster.post("/v1/chat/completions", { ...chat, stream: true });
    const text = await response.text();
    expect(text.length).toBeLessThan(100_000);
    expect(text).toContain('"error"');
    expect(text).not.toContain("[DONE]");
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
  });

  test("malformed chunks become an Anthropic error event, never a crash", async () => {
    using gen = brokenGeneration(() => ["data: {not json\n\n", "data: [DONE]\n\n"]);
    await using cluster = await startCluster({ config: { generationServers: [gen.url.origin] } });
    const response = await cluster.post("/v1/messages", {
      model: "m",
      max_tokens: 3,
      stream: true,
      messages: [{ role: "user", content: "x" }],
    });
    const text = await response.text();
    expect(text).toContain("event: error");
    expect(text).toContain("Malformed upstream stream chunk");
  });

  test("invalid UTF-8 inside a stream is relayed to a chat client as it came, and re-encoded for Anthropic clients", async () => {
    const bad = new Uint8Array([
      ...new TextEncoder().encode(
        'data: {"id":"x","object":"chat.completion.chunk","model":"m","choices":[{"index":0,"delta":{"content":"',
      ),
      0xff,
      0xfe,
      ...new TextEncoder().encode('"},"finish_reason":null}]}\n\ndata: [DONE]\n\n'),
    ]);
    using gen = brokenGeneration(() => [bad]);
    await using cluster = await startCluster({ config: { generationServers: [gen.url.origin] } });
    const chatStream = new Uint8Array(await (await cluster.post("/v1/chat/completions", { ...chat, stream: true })).arrayBuffer());
    expect(Buffer.from(chatStream).equals(Buffer.from(bad))).toBe(true);
    const anthropic = await (
      await cluster.post("/v1/messages", { model: "m", max_tokens: 3, stream: true, messages: [{ role: "user", content: "x" }] })
    ).text();
    expect(anthropic).toContain("\uFFFD");
    expect(anthropic).toContain("event: message_stop");
  });
});

/**
 * A context worker that forwards everything to a real emulated one, then rewrites its JSON
 * answers to model requests (the hostile or odd part); `answers` records what it rewrote.
 */
function rewritingContext(rewrite: (answer: string) => string | ReadableStream<Uint8Array>): AsyncDisposable & {
  readonly origin: string;
  readonly answers: string[];
} {
  const real = startEmulatedWorker({ role: "context" });
  const answers: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    async fetch(request) {
      const url = new URL(request.url);
      const body = request.method === "GET" ? undefined : await request.arrayBuffer();
      const headers = new Headers(request.headers);
      headers.delete("host");
      const upstream = await fetch(real.url + url.pathname + url.search, {
        method: request.method,
        headers,
        ...(body === undefined ? {} : { body }),
      });
      if (request.method !== "POST" || !url.pathname.startsWith("/v1/") || upstream.status !== 200) return upstream;
      // Kept as text: a JSON.parse round trip would round the 64-bit disagg_request_id.
      const answer = await upstream.text();
      answers.push(answer);
      return new Response(rewrite(answer), { headers: { "content-type": "application/json" } });
    },
  });
  return {
    origin: server.url.origin,
    answers,
    async [Symbol.asyncDispose]() {
      await server.stop(true);
      await real.stop();
    },
  };
}

const IDS_MEMBER = /,?"prompt_token_ids":(\[[^\]]*\])/;

/** An answer's members as JSON text without its braces, its `prompt_token_ids` left out. */
function membersOf(answer: string): string {
  return answer.replace(IDS_MEMBER, "").slice(1, -1).replace(/^,/, "");
}

/** An answer's `prompt_token_ids` list, as its text. */
function idsOf(answer: string): string {
  return IDS_MEMBER.exec(answer)![1]!;
}

describe("how worker answers are read", () => {
  test("a context answer that repeats prompt_token_ids hands the generation worker the last list, the one the proxy reads", async () => {
    const long = JSON.stringify(Array.from({ length: 20_000 }, (_, i) => 1000 + (i % 30_000)));
    await using hostile = rewritingContext(
      (answer) => `{"prompt_token_ids":${long},${membersOf(answer)},"prompt_token_ids":${idsOf(answer)}}`,
    );
    await using cluster = await startCluster({ config: { contextServers: [hostile.origin], maxRetries: 0 } });
    const response = await cluster.post("/v1/chat/completions", chat);
    expect(response.status).toBe(200);
    const gen = cluster.generations[0]!.requests.find((r) => r.phase === "generation")!;
    const sent = isJsonObject(gen.body) ? gen.body["prompt_token_ids"] : undefined;
    expect(sent).toEqual(JSON.parse(idsOf(hostile.answers[0]!)) as number[]);
  });

  const shapes: [string, (answer: string) => string | ReadableStream<Uint8Array>, RegExp][] = [
    [
      "nests 300 levels deep (valid JSON)",
      (answer) => `{"x":${deep(300)},${membersOf(answer)},"prompt_token_ids":${idsOf(answer)}}`,
      /nests deeper than 256 levels/,
    ],
    ["is 1 MiB of [", () => "[".repeat(1 << 20), /nests deeper than 256 levels/],
    ["is an endless chunked stream of [", () => endless("["), /nests deeper than 256 levels/],
    [
      "holds 300,000 empty lists (valid JSON)",
      (answer) => `{"x":[${"[],".repeat(300_000)}[]],${membersOf(answer)}}`,
      /holds more than \d+ JSON values/,
    ],
  ];
  test.each(shapes)("a context answer that %s is refused with a 502 before it is parsed, and logged", async (_name, rewrite, message) => {
    await using hostile = rewritingContext(rewrite);
    await using cluster = await startCluster({ config: { contextServers: [hostile.origin], maxRetries: 0, maxAnswerBytes: 8 << 20 } });
    const response = await cluster.post("/v1/chat/completions", chat);
    expect(response.status).toBe(502);
    expect(((await response.json()) as { message: string }).message).toMatch(message);
    expect(
      cluster.logs.some((r) => r["msg"] === "context leg failed" && r["code"] === "WORKER_BAD_ANSWER" && message.test(String(r["error"]))),
    ).toBe(true);
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
  });

  test("a non-streamed generation answer nested 300 levels deep is refused with a 502 as well", async () => {
    using gen = fakeWorker(
      () => new Response(`{"object":"chat.completion","x":${deep(300)},"choices":[]}`, { headers: { "content-type": "application/json" } }),
    );
    await using cluster = await startCluster({ config: { generationServers: [gen.url.origin], maxRetries: 0 } });
    const response = await cluster.post("/v1/chat/completions", chat);
    expect(response.status).toBe(502);
    expect(((await response.json()) as { message: string }).message).toMatch(/nests deeper than 256 levels/);
  });

  test("a worker's error answer nested 300 levels deep is refused with a 502, not parsed for its message", async () => {
    using ctx = fakeWorker(() => new Response(`{"detail":${deep(300)}}`, { status: 400, headers: { "content-type": "application/json" } }));
    await using cluster = await startCluster({ config: { contextServers: [ctx.url.origin], maxRetries: 0 } });
    const response = await cluster.post("/v1/chat/completions", chat);
    expect(response.status).toBe(502);
    expect(((await response.json()) as { message: string }).message).toMatch(/nests deeper than 256 levels/);
  });
});

/** Valid JSON nested `levels` deep. */
function deep(levels: number): string {
  return `${"[".repeat(levels)}${"]".repeat(levels)}`;
}

/** A body that never ends: the same bytes, a chunk each time the reader wants more. */
function endless(text: string): ReadableStream<Uint8Array> {
  const chunk = new TextEncoder().encode(text.repeat(16 * 1024));
  return new ReadableStream({
    pull(controller) {
      controller.enqueue(chunk);
    },
  });
}
