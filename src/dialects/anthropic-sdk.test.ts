/** The reframed stream as the official Anthropic SDK reads it: no socket, a fetch that replays bytes. */
import { describe, expect, test } from "bun:test";
import Anthropic, { APIError } from "@anthropic-ai/sdk";
import { ProxyError } from "../errors.ts";
import { concatBytes } from "../bytes.ts";
import { anthropicStream } from "./anthropic-dialect.ts";
import { counterIds, fixtureBytes, pieces } from "./anthropic-test-events.ts";

/** The client bytes for `upstream` relayed in small pieces with a ping between each. */
function reframed(upstream: Uint8Array, failure?: ProxyError): Uint8Array {
  const stream = anthropicStream(counterIds());
  const out = [stream.keepalive()];
  for (const piece of pieces(upstream, 97)) out.push(stream.push(piece), stream.keepalive());
  if (failure !== undefined) out.push(stream.fail(failure));
  return concatBytes(out.filter((part): part is Uint8Array => part !== undefined)) ?? new Uint8Array(0);
}

function sdkReading(bytes: Uint8Array): Anthropic {
  const headers = { "content-type": "text/event-stream" };
  return new Anthropic({
    apiKey: "test",
    baseURL: "http://proxy.invalid",
    maxRetries: 0,
    fetch: () => Promise.resolve(new Response(bytes, { headers })),
  });
}

const request = { model: "m", max_tokens: 1024, messages: [{ role: "user" as const, content: "hi" }] };

describe("the Anthropic SDK", () => {
  test("accumulates parallel tool calls into complete tool_use blocks", async () => {
    const message = await sdkReading(reframed(await fixtureBytes("tool-parallel.sse")))
      .messages.stream(request)
      .finalMessage();
    expect(message).toMatchObject({
      id: "msg_1",
      model: "glm-4.6",
      stop_reason: "tool_use",
      usage: { input_tokens: 500, output_tokens: 6 },
      content: [
        { type: "tool_use", id: "call_a", name: "Glob", input: { pattern: "*.ts" } },
        { type: "tool_use", id: "call_b", name: "Grep", input: { pattern: "TODO" } },
        { type: "tool_use", id: "toolu_1", name: "Read", input: { file_path: "/x" } },
      ],
    });
  });

  test("accumulates thinking and text", async () => {
    const message = await sdkReading(reframed(await fixtureBytes("reasoning-text.sse")))
      .messages.stream(request)
      .finalMessage();
    expect(message).toMatchObject({
      stop_reason: "stop_sequence",
      stop_sequence: "###",
      content: [
        { type: "thinking", thinking: "The user wants a haiku." },
        { type: "text", text: "Autumn moonlight—\na worm digs silently" },
      ],
      usage: { input_tokens: 40, output_tokens: 5, cache_read_input_tokens: 960 },
    });
  });

  test("raises a late failure as an API error with its message", async () => {
    const upstream = (await fixtureBytes("text.sse")).subarray(0, 600);
    const bytes = reframed(upstream, new ProxyError("WORKER_TIMEOUT", 504, "The generation worker went silent"));
    const stream = sdkReading(bytes).messages.stream(request);
    const error: unknown = await stream.finalMessage().then(
      () => undefined,
      (thrown: unknown) => thrown,
    );
    expect(error).toBeInstanceOf(APIError);
    expect(String(error)).toContain("The generation worker went silent");
  });
});
