import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { eventually, startCluster, type TestCluster } from "./support/cluster.ts";
import { fakeWorker } from "./support/fake-worker.ts";

/**
 * A client that closes its connection once it has the response's last event (Codex closes on
 * response.completed) has a whole response: the request ends as a success, not as a client
 * that left, even when the worker has not closed its stream yet.
 */

const encoder = new TextEncoder();
const CHAT = [
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", model: "m", choices: [{ index: 0, delta: { role: "assistant", content: "hi" }, finish_reason: null }] })}\n\n`,
  `data: ${JSON.stringify({ id: "c1", object: "chat.completion.chunk", model: "m", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`,
  "data: [DONE]\n\n",
];
const RESPONSE = { id: "resp_1", object: "response", status: "in_progress", model: "m", output: [] };
const RESPONSES = [
  `event: response.created\ndata: ${JSON.stringify({ type: "response.created", response: RESPONSE, sequence_number: 0 })}\n\n`,
  `event: response.completed\ndata: ${JSON.stringify({ type: "response.completed", response: { ...RESPONSE, status: "completed" }, sequence_number: 1 })}\n\n`,
];

/** A generation worker that sends its whole stream, then keeps the connection open (it closes late). */
function lingeringGeneration(): ReturnType<typeof fakeWorker> {
  return fakeWorker(async (request) => {
    const path = new URL(request.url).pathname;
    if (path === "/version") return Response.json({ version: "1.3.0rc28" });
    const events = path === "/v1/responses" ? RESPONSES : CHAT;
    const stream = new ReadableStream<Uint8Array>({
      start(controller) {
        for (const event of events) controller.enqueue(encoder.encode(event));
        // Never closed by the worker: the request's end cancels it.
      },
    });
    return new Response(stream, { headers: { "content-type": "text/event-stream" } });
  });
}

/** Reads until `last` appears, then drops the connection. */
async function readUntilThenLeave(response: Response, last: string): Promise<string> {
  const reader = response.body!.getReader();
  const decoder = new TextDecoder();
  let text = "";
  while (!text.includes(last)) {
    const { done, value } = await reader.read();
    if (done) break;
    text += decoder.decode(value, { stream: true });
  }
  await reader.cancel();
  return text;
}

describe("a client that leaves after the last event", () => {
  let cluster: TestCluster;
  let generation: ReturnType<typeof fakeWorker>;
  beforeAll(async () => {
    generation = lingeringGeneration();
    cluster = await startCluster({ config: { generationServers: [`http://127.0.0.1:${generation.port}`] } });
  });
  afterAll(async () => {
    await cluster[Symbol.asyncDispose]();
    await generation.stop(true);
  });

  async function loggedEnd(route: string): Promise<Record<string, unknown>> {
    const line = (): Record<string, unknown> | undefined =>
      cluster.logs.findLast((record) => record["route"] === route && record["outcome"] !== undefined);
    await eventually(() => line() !== undefined, 2000, `the ${route} request's log line`);
    return line()!;
  }

  test("a chat stream read to [DONE] ends ok, status 200", async () => {
    const response = await cluster.post("/v1/chat/completions", {
      model: "m",
      messages: [{ role: "user", content: "hello" }],
      stream: true,
    });
    await readUntilThenLeave(response, "[DONE]");
    expect(await loggedEnd("/v1/chat/completions")).toMatchObject({ status: 200, outcome: "ok" });
  });

  test("a Responses stream read to response.completed ends ok, status 200", async () => {
    const response = await cluster.post("/v1/responses", { model: "m", input: "hello", stream: true });
    await readUntilThenLeave(response, "response.completed");
    expect(await loggedEnd("/v1/responses")).toMatchObject({ status: 200, outcome: "ok" });
  });

  test("an Anthropic stream read to message_stop ends ok, status 200", async () => {
    const response = await cluster.post("/v1/messages", {
      model: "m",
      max_tokens: 8,
      messages: [{ role: "user", content: "hello" }],
      stream: true,
    });
    await readUntilThenLeave(response, "message_stop");
    expect(await loggedEnd("/v1/messages")).toMatchObject({ status: 200, outcome: "ok" });
  });
});
