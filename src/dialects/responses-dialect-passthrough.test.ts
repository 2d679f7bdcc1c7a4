import { describe, expect, test } from "bun:test";
import { ProxyError } from "../errors.ts";
import { responsesStream } from "./responses-dialect.ts";
import {
  WORKER_RESPONSE,
  clientEvents,
  decoder,
  encoder,
  expectOneSequence,
  pieces,
  pushAll,
  responseOf,
  types,
  workerEvent,
  workerStream,
} from "./responses-test-fixtures.ts";

const failure = new ProxyError("WORKER_STREAM_BROKEN", 502, "The generation worker's stream broke off");

function passThrough() {
  return responsesStream({ opening: undefined });
}

function text(parts: readonly (Uint8Array | undefined)[]): string {
  return parts.map((part) => (part === undefined ? "" : decoder.decode(part))).join("");
}

describe("Responses dialect, answered within the start wait", () => {
  test("the worker's stream is relayed byte for byte, for every cut, with nothing added at its end", () => {
    const worker = encoder.encode(workerStream());
    for (const size of [1, 7, 4096]) {
      const stream = passThrough();
      const relayed = pushAll(stream, pieces(worker, size));
      expect(relayed).toEqual(worker);
      expect(stream.end()).toBeUndefined();
    }
  });

  test("without an opening object no opening is sent and the relay stays byte for byte", () => {
    const stream = passThrough();
    expect(stream.opening()).toBeUndefined();
    const worker = encoder.encode(workerStream());
    expect(pushAll(stream, [worker])).toEqual(worker);
  });

  test("a keepalive repeats the worker's response object with the next number, and later events follow it", () => {
    const stream = passThrough();
    const opening =
      workerEvent("response.created", 0, { response: WORKER_RESPONSE }) +
      workerEvent("response.in_progress", 1, { response: WORKER_RESPONSE });
    const first = stream.push(encoder.encode(opening));
    const keepalive = stream.keepalive();
    const next = stream.push(encoder.encode(workerEvent("response.output_text.delta", 2, { delta: "a" })));
    const events = clientEvents(encoder.encode(text([first, keepalive, next])));
    expectOneSequence(events);
    expect(types(events)).toEqual(["response.created", "response.in_progress", "response.in_progress", "response.output_text.delta"]);
    expect(responseOf(events[2])).toEqual(WORKER_RESPONSE);
  });

  test("a keepalive continues the worker's own numbers, from its last event's own bytes, not the chunk's", () => {
    const stream = passThrough();
    const chunk = encoder.encode(
      workerEvent("response.created", 7, { response: WORKER_RESPONSE }) +
        workerEvent("response.in_progress", 8, { response: WORKER_RESPONSE }),
    );
    stream.push(chunk);
    // The chunk went to the client; an idle stream keeps none of it.
    chunk.fill(0);
    const [keepalive] = clientEvents(stream.keepalive() ?? new Uint8Array());
    expect(keepalive?.payload["sequence_number"]).toBe(9);
    expect(responseOf(keepalive)).toEqual(WORKER_RESPONSE);
  });

  test("no keepalive is inserted inside a frame the worker has only partly sent", () => {
    const stream = passThrough();
    stream.push(encoder.encode(workerEvent("response.created", 0, { response: WORKER_RESPONSE })));
    stream.push(encoder.encode("event: response.output_text.delta\ndata: {"));
    expect(stream.keepalive()).toBeUndefined();
  });

  test("no keepalive is sent before the worker's response object is known", () => {
    expect(passThrough().keepalive()).toBeUndefined();
  });

  test("a stream cut inside an event is terminated, then error and response.failed continue the worker's sequence", () => {
    const stream = passThrough();
    const worker =
      workerEvent("response.created", 0, { response: WORKER_RESPONSE }) + workerEvent("response.output_text.delta", 1, { delta: "a" });
    const cut = 'event: response.output_text.delta\ndata: {"type":"response.output_text.delta","del';
    const relayed = stream.push(encoder.encode(worker + cut));
    const ended = stream.end();
    expect(ended).toBeInstanceOf(ProxyError);
    const tail = stream.fail(ended instanceof ProxyError ? ended : failure);
    expect(decoder.decode(tail).startsWith("\n\n")).toBe(true);
    // The client's parser sees the cut event as one garbled event (the worker's number 2), then ours.
    const scanned = clientEvents(encoder.encode(worker + decoder.decode(tail).slice(2)));
    expect(scanned.map((e) => e.payload["sequence_number"])).toEqual([0, 1, 3, 4]);
    expect(types(scanned)).toEqual(["response.created", "response.output_text.delta", "error", "response.failed"]);
    expect(responseOf(scanned[3])["id"]).toBe(WORKER_RESPONSE["id"] ?? "");
    expect(text([relayed, tail]).startsWith(worker + cut)).toBe(true);
  });

  test("a failure before any worker byte is a single internal_error event numbered 0", () => {
    const events = clientEvents(passThrough().fail(failure));
    expect(events.map((e) => e.payload)).toEqual([
      { type: "error", code: "internal_error", message: failure.message, param: null, sequence_number: 0 },
    ]);
  });

  test("a stream cut between events gets error and response.failed without a frame terminator", () => {
    const stream = passThrough();
    stream.push(encoder.encode(workerEvent("response.created", 0, { response: WORKER_RESPONSE })));
    const tail = decoder.decode(stream.fail(failure));
    expect(tail.startsWith("event: error\n")).toBe(true);
    const events = clientEvents(encoder.encode(tail));
    expect(events.map((e) => e.payload["sequence_number"])).toEqual([1, 2]);
    expect(events[0]?.payload["code"]).toBe("upstream_error");
  });

  test("a terminal event whose blank line never came is terminated and completes the response", () => {
    const stream = passThrough();
    const worker = workerEvent("response.completed", 0, { response: WORKER_RESPONSE }).trimEnd();
    stream.push(encoder.encode(worker));
    const tail = stream.end();
    expect(tail instanceof Uint8Array && decoder.decode(tail)).toBe("\n\n");
  });

  test("an event without an event line is typed by its payload", () => {
    const stream = passThrough();
    const data = JSON.stringify({ type: "response.completed", response: WORKER_RESPONSE, sequence_number: 0 });
    stream.push(encoder.encode(`data: ${data}\n\n`));
    expect(stream.end()).toBeUndefined();
  });

  test("a worker error event is relayed untouched and recorded", () => {
    const stream = passThrough();
    const error = workerEvent("error", 0, { code: "engine_error", message: "RequestError: boom", param: null });
    expect(decoder.decode(stream.push(encoder.encode(error)))).toBe(error);
    expect(stream.workerError).toBe("RequestError: boom");
  });
});
