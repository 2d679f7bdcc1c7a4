import { describe, expect, test } from "bun:test";
import { startEmulatedWorker } from "../index.ts";
import { at, drain, json, post, rawPost, sseEvents, ssePayloads, stringAt } from "../test-support.ts";

const chat = (content: string, stream = true) => ({ messages: [{ role: "user", content }], stream });

describe("reject fault", () => {
  test("answers the directive's status in the error envelope after its delay", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const started = performance.now();
    const response = await post(worker.url, "/v1/chat/completions", chat("x [[emu reject=503 reject_after_ms=30]]"));
    expect(performance.now() - started).toBeGreaterThanOrEqual(29);
    expect(response.status).toBe(503);
    expect(await json(response)).toEqual({
      object: "error",
      message: "Emulated rejection with status 503",
      type: "ServiceUnavailableError",
      param: null,
      code: 503,
    });
    expect(worker.requests[0]?.status).toBe("finished");
  });

  test("applies the worker-wide fault unless a directive overrides it", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", faults: { rejectStatus: 429 } });
    expect((await post(worker.url, "/v1/completions", { prompt: "x" })).status).toBe(429);
    expect((await post(worker.url, "/v1/completions", { prompt: "x [[emu reject=500]]" })).status).toBe(500);
  });

  test("strikes only the phase its prefix names", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const response = await post(worker.url, "/v1/completions", { prompt: "x [[emu ctx.reject=503]]" });
    expect(response.status).toBe(200);
  });
});

describe("cut fault", () => {
  test("closes a stream abruptly after N tokens, without [DONE]", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", recordReplies: true });
    const response = await post(worker.url, "/v1/chat/completions", chat("x [[emu tokens=5 cut=2]]"));
    expect(response.status).toBe(200);
    const { text, error } = await drain(response);
    expect(error).toBeDefined();
    expect(text).not.toContain(" tok3");
    expect(text).not.toContain("[DONE]");
    const record = await worker.waitFor((r) => r.status === "finished");
    // What the worker sent before the cut (an abrupt close may lose unread bytes on the client's side).
    const sent = new TextDecoder().decode(Buffer.concat(record.sent));
    expect(sent).toContain(" tok2");
    expect(sent).not.toContain(" tok3");
    expect(sent).not.toContain("[DONE]");
  });

  test("breaks a non-streamed answer off halfway", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", faults: { cutAfterTokens: 1 } });
    const response = await post(worker.url, "/v1/completions", { prompt: "x" });
    expect(response.status).toBe(200);
    expect((await drain(response)).error).toBeDefined();
  });
});

describe("chunk fault", () => {
  for (const size of [1, 7]) {
    test(`re-splits the stream into ${size}-byte pieces whatever the event boundaries`, async () => {
      await using worker = startEmulatedWorker({ role: "mixed" });
      const reply = await rawPost(worker.url, "/v1/chat/completions", chat(`x [[emu tokens=3 chunk=${size}]]`));
      expect(reply.head).toStartWith("HTTP/1.1 200");
      expect(reply.chunkSizes.slice(0, -1).every((s) => s === size)).toBe(true);
      expect(reply.chunkSizes.at(-1)).toBeLessThanOrEqual(size);
      const deltas = ssePayloads(reply.body).map((c) => at(c, "choices", 0, "delta", "content"));
      expect(deltas).toEqual(["", " tok1", " tok2", " tok3"]);
      expect(reply.body.endsWith("data: [DONE]\n\n")).toBe(true);
    });
  }

  test("re-splits a non-streamed JSON answer too", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", faults: { chunkBytes: 16 } });
    const reply = await rawPost(worker.url, "/v1/completions", { prompt: "x [[emu tokens=2]]" });
    expect(reply.chunkSizes.length).toBeGreaterThan(3);
    expect(JSON.parse(reply.body)).toMatchObject({ choices: [{ text: " tok1 tok2" }] });
  });
});

describe("silence fault", () => {
  test("goes silent for silence_ms after silence_after tokens", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    // Without prefill or token latency only the silence can make the reply take 60 ms; a lower
    // bound, so a loaded machine (which reads late, maybe both tokens at once) cannot fail it.
    const started = performance.now();
    const response = await post(worker.url, "/v1/completions", {
      prompt: "x [[emu tokens=2 silence_ms=60 silence_after=1]]",
      stream: true,
    });
    const text = await response.text();
    expect(text.indexOf(" tok1")).toBeGreaterThan(0);
    expect(text.indexOf(" tok2")).toBeGreaterThan(text.indexOf(" tok1"));
    expect(performance.now() - started).toBeGreaterThanOrEqual(55);
  });

  test("keeps a Responses stream alive with response.in_progress during the silence", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", responsesKeepaliveMs: 15, faults: { silenceMs: 60 } });
    const response = await post(worker.url, "/v1/responses", { input: "x [[emu tokens=2]]", stream: true });
    const types = sseEvents(await response.text()).map((e) => e.event);
    const firstDelta = types.indexOf("response.output_text.delta");
    const between = types.slice(firstDelta + 1, types.lastIndexOf("response.output_text.delta"));
    expect(between.length).toBeGreaterThanOrEqual(2);
    expect(between.every((type) => type === "response.in_progress")).toBe(true);
  });
});

describe("error event fault", () => {
  test("ends a chat stream with an in-band error after N tokens", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const response = await post(worker.url, "/v1/chat/completions", chat("x [[emu tokens=4 error_event=1]]"));
    const { text, error } = await drain(response);
    expect(error).toBeUndefined();
    expect(text).not.toContain("[DONE]");
    const chunks = ssePayloads(text);
    expect(at(chunks[1], "choices", 0, "delta", "content")).toBe(" tok1");
    expect(at(chunks.at(-1), "error")).toEqual({
      message: "Emulated engine error after 1 tokens",
      type: "InternalServerError",
      param: null,
      code: 500,
    });
  });

  test("ends a Responses stream with error and response.failed, numbered in sequence", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const response = await post(worker.url, "/v1/responses", { input: "x [[emu error_event=2]]", stream: true });
    const payloads = ssePayloads(await response.text());
    const [error, failed] = payloads.slice(-2);
    expect(at(error, "type")).toBe("error");
    expect(at(failed, "type")).toBe("response.failed");
    expect(at(failed, "response", "status")).toBe("failed");
    expect(at(failed, "response", "error", "code")).toBe("server_error");
    expect(at(failed, "response", "id")).toBe(at(payloads[0], "response", "id") ?? null);
    expect(payloads.map((p) => at(p, "sequence_number"))).toEqual(payloads.map((_, i) => i));
  });

  test("answers 500 for a non-streamed request", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", faults: { errorEventAfterTokens: 0 } });
    const response = await post(worker.url, "/v1/completions", { prompt: "x" });
    expect(response.status).toBe(500);
    expect(stringAt(await json(response), "type")).toBe("InternalServerError");
  });
});
