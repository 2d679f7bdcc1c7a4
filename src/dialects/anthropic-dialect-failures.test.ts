import { describe, expect, test } from "bun:test";
import { ProxyError } from "../errors.ts";
import { concatBytes } from "../bytes.ts";
import type { DialectStream } from "../streaming/dialect.ts";
import { anthropicStream } from "./anthropic-dialect.ts";
import { chatSse, checkGrammar, counterIds, fixtureBytes, readEvents, type SeenEvent } from "./anthropic-test-events.ts";

const EMPTY = new Uint8Array(0);
const encoder = new TextEncoder();

function start(): DialectStream {
  return anthropicStream(counterIds());
}

function collect(...parts: (Uint8Array | ProxyError | undefined)[]): SeenEvent[] {
  const bytes = parts.filter((part): part is Uint8Array => part instanceof Uint8Array);
  const events = readEvents(concatBytes(bytes) ?? EMPTY);
  checkGrammar(events);
  return events;
}

const textChunks = chatSse([{ choices: [{ delta: { content: "Hel" } }] }, { choices: [{ delta: { content: "lo" } }] }], false);
const errorEvent = (type: string, message: string) => ({
  event: "error",
  data: { type: "error", error: { type, message } },
});
const closeBlock = { event: "content_block_stop", data: { type: "content_block_stop", index: 0 } };

/** After an error or message_stop the stream is over: nothing more may be written. */
function expectOver(stream: DialectStream): void {
  expect(stream.push(encoder.encode('data: {"choices":[{"delta":{"content":"late"}}]}\n\n'))).toBeUndefined();
  expect(stream.keepalive()).toBeUndefined();
  expect(stream.end()).toBeUndefined();
  expect(stream.fail(new ProxyError("INTERNAL", 500, "again"))).toEqual(EMPTY);
}

describe("late failure", () => {
  test("closes the open block, then sends an api_error event and no message_stop", () => {
    const stream = start();
    const events = collect(
      stream.push(textChunks),
      stream.fail(new ProxyError("WORKER_TIMEOUT", 504, "The generation worker went silent")),
    );
    expect(events.slice(-2)).toEqual([closeBlock, errorEvent("api_error", "The generation worker went silent")]);
    expect(events.some((e) => e.event === "message_stop")).toBe(false);
    expectOver(stream);
  });

  test("a 4xx failure is an invalid_request_error carrying the worker's own message", () => {
    const body = encoder.encode('{"object":"error","message":"This model\'s maximum context length is 8192 tokens","code":400}');
    const error = new ProxyError("WORKER_HTTP_ERROR", 400, "Context worker answered 400", {
      workerAnswer: { status: 400, contentType: "application/json", body },
    });
    const stream = start();
    const events = collect(stream.keepalive(), stream.fail(error));
    expect(events).toEqual([
      { event: "ping", data: { type: "ping" } },
      errorEvent("invalid_request_error", "This model's maximum context length is 8192 tokens"),
    ]);
  });

  test("a failure before any block opened sends the error alone", () => {
    const stream = start();
    const first = stream.push(chatSse([{ choices: [] }], false));
    const events = collect(first, stream.fail(new ProxyError("WORKER_UNREACHABLE", 502, "Cannot reach http://10.0.0.9:8001")));
    expect(events.map((e) => e.event)).toEqual(["message_start", "error"]);
    expect(events[1]).toEqual(errorEvent("api_error", "Cannot reach <url>"));
  });
});

describe("an upstream that ends before [DONE]", () => {
  test("is reported as broken, and failing with that closes the block and sends the error", () => {
    const stream = start();
    const out = stream.push(textChunks);
    const ended = stream.end();
    expect(ended).toBeInstanceOf(ProxyError);
    if (!(ended instanceof ProxyError)) return;
    expect({ code: ended.code, status: ended.status, message: ended.message }).toEqual({
      code: "WORKER_STREAM_BROKEN",
      status: 502,
      message: "Upstream stream ended before [DONE]; the response is incomplete",
    });
    const events = collect(out, stream.fail(ended));
    expect(events.slice(-2)).toEqual([closeBlock, errorEvent("api_error", ended.message)]);
  });

  test("is complete once [DONE] came, whatever follows", async () => {
    const stream = start();
    collect(stream.push(await fixtureBytes("text.sse")));
    expectOver(stream);
  });
});

describe("a worker's in-band error", () => {
  const cases: [string, string, string, string][] = [
    [
      "an error object",
      '{"error":{"message":"CUDA out of memory on http://10.0.0.1:8000","type":"InternalServerError","code":500}}',
      "api_error",
      "CUDA out of memory on <url>",
    ],
    ["a 4xx error object", '{"error":{"message":"bad sampling params","code":400}}', "invalid_request_error", "bad sampling params"],
    [
      "an OpenAI error envelope",
      '{"object":"error","message":"engine died","type":"InternalServerError","code":500}',
      "api_error",
      "engine died",
    ],
  ];
  for (const [what, data, type, message] of cases) {
    test(`${what} closes the block, ends the stream with an error and is recorded`, () => {
      const stream = start();
      const events = collect(stream.push(textChunks), stream.push(encoder.encode(`data: ${data}\n\ndata: [DONE]\n\n`)));
      expect(events.slice(-2)).toEqual([closeBlock, errorEvent(type, message)]);
      expect(stream.workerError).toBe(message);
      expectOver(stream);
    });
  }

  for (const [what, data] of [
    ["JSON that does not parse", '{"choices": [{"delta": {"content": "x"'],
    ["JSON that is not a chat chunk", '{"choices": "nope"}'],
  ]) {
    test(`${what} is a malformed chunk`, () => {
      const stream = start();
      const events = collect(stream.push(textChunks), stream.push(encoder.encode(`data: ${data}\n\n`)));
      expect(events.slice(-2)).toEqual([closeBlock, errorEvent("api_error", "Malformed upstream stream chunk")]);
      expect(stream.workerError).toBe("Malformed upstream stream chunk");
      expectOver(stream);
    });
  }
});
