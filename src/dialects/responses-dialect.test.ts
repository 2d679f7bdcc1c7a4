import { describe, expect, test } from "bun:test";
import { ProxyError } from "../errors.ts";
import type { JsonObject } from "../json/json.ts";
import type { DialectStream } from "../streaming/dialect.ts";
import { responsesStream } from "./responses-dialect.ts";
import { buildResponsesOpening } from "./responses-opening.ts";
import {
  WORKER_RESPONSE,
  clientEvents,
  decoder,
  encoder,
  endBytes,
  endError,
  expectOneSequence,
  pieces,
  pushAll,
  responseOf,
  types,
  workerEvent,
  withoutSequence,
  workerStream,
} from "./responses-test-fixtures.ts";

const REQUEST: JsonObject = { model: "llama", input: "hi", stream: true, request_id: "resp_101_0123456789abcdef" };
const OPENING = buildResponsesOpening(REQUEST, 1_700_000_000_000);
const lateFailure = new ProxyError("WORKER_HTTP_ERROR", 400, "maximum context length is 8192 tokens");

function openedStream(): { stream: DialectStream; opening: Uint8Array } {
  const stream = responsesStream({ opening: OPENING });
  const opening = stream.opening();
  if (opening === undefined) throw new TypeError("The opening was not built");
  return { stream, opening };
}

function join(...parts: (Uint8Array | undefined)[]): Uint8Array {
  return encoder.encode(parts.map((part) => (part === undefined ? "" : decoder.decode(part))).join(""));
}

describe("Responses dialect, opened before the pipeline answered", () => {
  test("the opening is response.created then response.in_progress, numbered 0 and 1, with the built object", () => {
    const { opening } = openedStream();
    const events = clientEvents(opening);
    expect(types(events)).toEqual(["response.created", "response.in_progress"]);
    expectOneSequence(events);
    expect(responseOf(events[0])).toEqual(OPENING ?? {});
    expect(responseOf(events[1])).toEqual(OPENING ?? {});
  });

  test("every keepalive repeats the opening's response.in_progress with only the sequence number advanced", () => {
    const { stream, opening } = openedStream();
    const events = clientEvents(join(opening, stream.keepalive(), stream.keepalive()));
    expectOneSequence(events);
    const [, first, second, third] = events;
    expect(types(events).slice(1)).toEqual(["response.in_progress", "response.in_progress", "response.in_progress"]);
    expect(withoutSequence(second)).toEqual(withoutSequence(first));
    expect(withoutSequence(third)).toEqual(withoutSequence(first));
  });

  test("the relay drops the worker's opening and keepalives and numbers the rest, for 1-, 7- and 4096-byte cuts", () => {
    const worker = encoder.encode(workerStream());
    const outputs = [1, 7, 4096].map((size) => {
      const { stream, opening } = openedStream();
      return join(opening, stream.keepalive(), pushAll(stream, pieces(worker, size)), endBytes(stream.end()));
    });
    expect(outputs[1]).toEqual(outputs[0] ?? new Uint8Array());
    expect(outputs[2]).toEqual(outputs[0] ?? new Uint8Array());
    const events = clientEvents(outputs[0] ?? new Uint8Array());
    expectOneSequence(events);
    expect(types(events)).toEqual([
      "response.created",
      "response.in_progress",
      "response.in_progress",
      "response.output_item.added",
      "response.content_part.added",
      "response.output_text.delta",
      "response.output_text.delta",
      "response.output_text.done",
      "response.output_item.done",
      "response.completed",
    ]);
    const inProgress = events.filter((e) => e.payload["type"] === "response.in_progress");
    for (const event of inProgress) expect(responseOf(event)).toEqual(OPENING ?? {});
    expect(events[5]?.payload["delta"]).toBe("Hé 世界");
  });

  test("a keepalive between relayed events continues the client's sequence", () => {
    const { stream, opening } = openedStream();
    const first = stream.push(encoder.encode(workerEvent("response.output_text.delta", 4, { delta: "a" })));
    const keepalive = stream.keepalive();
    const second = stream.push(encoder.encode(workerEvent("response.output_text.delta", 5, { delta: "b" })));
    const events = clientEvents(join(opening, first, keepalive, second));
    expectOneSequence(events);
    expect(types(events).slice(2)).toEqual(["response.output_text.delta", "response.in_progress", "response.output_text.delta"]);
  });

  test("an error the worker numbered 0 before its opening continues the client's sequence and is recorded", () => {
    const { stream, opening } = openedStream();
    const error = workerEvent("error", 0, { code: "invalid_request", message: "bad tool", param: null });
    const relayed = stream.push(encoder.encode(error));
    const events = clientEvents(join(opening, relayed));
    expectOneSequence(events);
    expect(events[2]?.payload).toEqual({ type: "error", code: "invalid_request", message: "bad tool", param: null, sequence_number: 2 });
    expect(stream.workerError).toBe("bad tool");
  });

  test("a late pipeline failure ends the stream with error then response.failed under the opening's id", () => {
    const { stream, opening } = openedStream();
    const events = clientEvents(join(opening, stream.keepalive(), stream.fail(lateFailure)));
    expectOneSequence(events);
    expect(events[3]?.payload).toEqual({
      type: "error",
      code: "upstream_error",
      message: "maximum context length is 8192 tokens",
      param: null,
      sequence_number: 3,
    });
    const failed = responseOf(events[4]);
    expect(events[4]?.payload["type"]).toBe("response.failed");
    expect(failed["id"]).toBe("resp_101_0123456789abcdef");
    expect(failed["status"]).toBe("failed");
    expect(failed["error"]).toEqual({ code: "server_error", message: "maximum context length is 8192 tokens" });
    expect(stream.fail(lateFailure)).toHaveLength(0);
  });

  test("a worker stream cut inside an event drops the unfinished event, then error and response.failed follow in sequence", () => {
    const { stream, opening } = openedStream();
    const whole = workerEvent("response.output_text.delta", 4, { delta: "a" });
    const cut = workerEvent("response.output_text.delta", 5, { delta: "never finished" }).slice(0, 40);
    const relayed = stream.push(encoder.encode(whole + cut));
    const ended = endError(stream.end());
    expect([ended.code, ended.status, ended.message]).toEqual([
      "WORKER_STREAM_BROKEN",
      502,
      "Upstream stream ended before the response completed",
    ]);
    const events = clientEvents(join(opening, relayed, stream.fail(ended)));
    expectOneSequence(events);
    expect(types(events).slice(2)).toEqual(["response.output_text.delta", "error", "response.failed"]);
  });

  test("a terminal event whose blank line never came still completes the response", () => {
    const { stream, opening } = openedStream();
    const completed = workerEvent("response.completed", 9, { response: WORKER_RESPONSE }).trimEnd();
    const relayed = stream.push(encoder.encode(completed));
    const events = clientEvents(join(opening, relayed, endBytes(stream.end())));
    expectOneSequence(events);
    expect(types(events)[2]).toBe("response.completed");
  });

  test("the worker's response.failed is relayed, ends the response and is recorded", () => {
    const { stream, opening } = openedStream();
    const failed = { response: { ...WORKER_RESPONSE, status: "failed", error: { code: "server_error", message: "engine died" } } };
    const relayed = stream.push(encoder.encode(workerEvent("response.failed", 3, failed)));
    expect(stream.end()).toBeUndefined();
    expect(stream.workerError).toBe("engine died");
    expect(stream.keepalive()).toBeUndefined();
    expectOneSequence(clientEvents(join(opening, relayed)));
  });

  test("no failure events follow a terminal event", () => {
    const { stream } = openedStream();
    stream.push(encoder.encode(workerEvent("response.completed", 9, { response: WORKER_RESPONSE })));
    expect(stream.fail(lateFailure)).toHaveLength(0);
  });

  test("only the frame's own event line counts as terminal, not a payload that mentions it", () => {
    const { stream } = openedStream();
    stream.push(encoder.encode(workerEvent("response.output_text.delta", 4, { delta: "event: response.completed\n\n" })));
    expect(stream.end()).toBeInstanceOf(ProxyError);
  });
});
