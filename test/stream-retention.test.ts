import { expect, test } from "bun:test";
import { DEFAULTS, type ProxyConfig } from "../src/config/types.ts";
import { memoryLogger } from "../src/observability/logger.ts";
import { startProxy } from "../src/server/serve.ts";
import { fakeWorker } from "./support/fake-worker.ts";

const STREAMS = 16;
const encoder = new TextEncoder();

/** A context answer with the hand-off for the id the proxy sent (read from the body's text: a 63-bit id). */
function contextAnswer(requestText: string): string {
  const id = /"disagg_request_id":(\d+)/.exec(requestText)?.[1] ?? "0";
  return `{"id":"chatcmpl-1","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":" a"},"finish_reason":"length","disaggregated_params":{"request_type":"context_only","first_gen_tokens":[7],"ctx_request_id":${id},"disagg_request_id":${id},"encoded_opaque_state":"c3RhdGU=","ctx_dp_rank":0,"ctx_info_endpoint":"worker","schedule_style":0}}],"usage":{"prompt_tokens":3,"total_tokens":4,"completion_tokens":1},"prompt_token_ids":[1,2,3]}`;
}

/** What a client process does: opens streams whose prompts carry the given needles, reports when each has its first event, then holds them. */
const CLIENT = `
const [url, ...needles] = process.argv.slice(1);
for (const needle of needles) {
  const content = needle + " " + "lorem ipsum ".repeat(2000);
  const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify({ model: "m", messages: [{ role: "user", content }], max_tokens: 8, stream: true }) });
  await response.body.getReader().read();
}
process.stdout.write("open\\n");
await new Promise(() => {});
`;

test("an open stream keeps neither the client's prompt nor the body sent to the workers", async () => {
  // The workers drop every body once answered; the client is another process. So a prompt
  // still in this heap while the streams are open is one the proxy keeps.
  const context = fakeWorker(
    async (request) => new Response(contextAnswer(await request.text()), { headers: { "content-type": "application/json" } }),
  );
  const generation = fakeWorker(async (request) => {
    // Its stream never ends: the proxy's own GET /version and /v1/models as the worker joins would wait out their 2 s timeouts.
    if (request.method !== "POST") return new Response(null, { status: 404 });
    await request.arrayBuffer();
    const chunk = encoder.encode('data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n');
    return new Response(new ReadableStream({ start: (controller) => controller.enqueue(chunk) }), {
      headers: { "content-type": "text/event-stream" },
    });
  });
  const config: ProxyConfig = {
    ...DEFAULTS,
    host: "127.0.0.1",
    port: 0,
    contextServers: [context.url.origin],
    generationServers: [generation.url.origin],
    requestTimeoutMs: 60_000,
    nodeId: 3,
    serverStartTimeoutMs: 2000,
    serverStartPollMs: 20,
    configFile: undefined,
  };
  const proxy = startProxy(config, memoryLogger(), "test");
  const needles = Array.from({ length: STREAMS }, (_, i) => `needle-${i}-${crypto.randomUUID()}`);
  let client: Bun.Subprocess<"ignore", "pipe", "inherit"> | undefined;
  try {
    await proxy.waitForWorkers();
    client = Bun.spawn([process.execPath, "-e", CLIENT, `${proxy.url.origin}/v1/chat/completions`, ...needles], {
      stdout: "pipe",
      stderr: "inherit",
    });
    const reader = client.stdout.getReader();
    let said = "";
    while (!said.includes("open\n")) {
      const { done, value } = await reader.read();
      if (done) throw new Error("The client process ended before its streams were open");
      said += new TextDecoder().decode(value);
    }
    Bun.gc(true);
    const heap = Bun.generateHeapSnapshot("v8");
    const kept = needles.filter((needle) => heap.includes(`${needle} lorem ipsum`));
    // The stack and registers are scanned conservatively: a prompt or two may be held by chance
    // (2 of 8 in one run of many), while a proxy that keeps prompts keeps every stream's.
    expect(kept.length).toBeLessThanOrEqual(2);
  } finally {
    client?.kill();
    await proxy.stop();
    await Promise.all([context.stop(true), generation.stop(true)]);
  }
});
