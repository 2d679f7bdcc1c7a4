import { describe, expect, test } from "bun:test";
import { readClientJson, type BodyLimits } from "./client-body.ts";

const LIMITS: BodyLimits = { maxBytes: 1 << 20, minBytesPerSecond: 1, graceMs: 60_000 };
const encoder = new TextEncoder();

/** A POST whose body arrives in the given pieces, with or without its length declared. */
function post(text: string, cuts: readonly number[], declared: boolean): Request {
  const bytes = encoder.encode(text);
  const bounds = [0, ...cuts, bytes.length];
  let next = 0;
  const body = new ReadableStream<Uint8Array>({
    pull(controller) {
      if (next + 1 >= bounds.length) controller.close();
      // A fresh buffer per piece, as the runtime hands them over.
      else controller.enqueue(bytes.slice(bounds[next], bounds[++next]));
    },
  });
  const headers: Record<string, string> = declared ? { "content-length": String(bytes.length) } : {};
  return new Request("http://proxy.test/v1/chat/completions", { method: "POST", body, headers });
}

describe("readClientJson", () => {
  const text = JSON.stringify({ model: "m", messages: [{ role: "user", content: "é世 ".repeat(3000) }], n: 1 });
  const cuts = [1, 7, 8, 4000, 4001, 9000];

  for (const declared of [true, false]) {
    test(`a body in many pieces (${declared ? "declared length" : "chunked"}) is read whole, each member's bytes where its layout says`, async () => {
      // A short grace makes even a small declared body go through the piece-by-piece reader.
      const { body, source } = await readClientJson(post(text, cuts, declared), { ...LIMITS, graceMs: 0.001, minBytesPerSecond: 1e12 });
      expect(body).toEqual(JSON.parse(text) as typeof body);
      expect(new TextDecoder().decode(source.bytes)).toBe(text);
      const member = source.members.get("messages");
      expect(new TextDecoder().decode(source.bytes.subarray(member?.start, member?.end))).toBe(
        `"messages":${JSON.stringify(body["messages"])}`,
      );
    });
  }

  test("a chunked body many times its first buffer is read whole", async () => {
    const large = JSON.stringify({ model: "m", messages: [{ role: "user", content: "é世 ".repeat(40_000) }] });
    const cutsEvery = Array.from({ length: 100 }, (_, i) => 1 + i * 3001);
    const { body, source } = await readClientJson(post(large, cutsEvery, false), { ...LIMITS, graceMs: 0.001, minBytesPerSecond: 1e12 });
    expect(body).toEqual(JSON.parse(large) as typeof body);
    expect(new TextDecoder().decode(source.bytes)).toBe(large);
  });

  test("a chunked body larger than the bound is refused with a 413", async () => {
    const refused = await readClientJson(post(text, cuts, false), { ...LIMITS, maxBytes: 5000 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toMatchObject({ status: 413 });
  });

  test("a body in pieces absurdly small on average is refused with a 400 before it is all read", async () => {
    const small = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(3000) }] });
    const everyByte = Array.from({ length: small.length - 1 }, (_, i) => i + 1);
    const request = post(small, everyByte, false);
    const refused = await readClientJson(request, LIMITS).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toMatchObject({ status: 400, code: "BODY_TOO_FRAGMENTED" });
  });

  test("a body in pieces of 256 bytes, however many, is read whole", async () => {
    const large = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(600_000) }] });
    const every256 = Array.from({ length: Math.floor((large.length - 1) / 256) }, (_, i) => (i + 1) * 256);
    const { body } = await readClientJson(post(large, every256, false), LIMITS);
    expect(body).toEqual(JSON.parse(large) as typeof body);
  });

  test("a body whose pieces are all there gives the event loop turns while it is read", async () => {
    const large = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(600_000) }] });
    const every256 = Array.from({ length: Math.floor((large.length - 1) / 256) }, (_, i) => (i + 1) * 256);
    let turns = 0;
    let reading = true;
    const count = (): void => {
      turns++;
      if (reading) setImmediate(count);
    };
    setImmediate(count);
    await readClientJson(post(large, every256, false), LIMITS);
    const turnsWhileReading = turns;
    reading = false;
    // 2,300 pieces: a turn every few hundred pieces at most, not one when the body is done.
    expect(turnsWhileReading).toBeGreaterThanOrEqual(every256.length / 500);
  });

  test("a chunked body that stops coming is cut with a 408 by the one deadline of the body", async () => {
    let pieces = 0;
    const body = new ReadableStream<Uint8Array>({
      async pull(controller) {
        // Some pieces, then nothing: the reader waits for a piece that never comes.
        if (pieces++ < 200) controller.enqueue(encoder.encode(pieces === 1 ? '{"model":"m","p":"' : "x".repeat(300)));
        else await new Promise(() => {});
      },
    });
    const request = new Request("http://proxy.test/v1/chat/completions", { method: "POST", body });
    const refused = await readClientJson(request, { ...LIMITS, graceMs: 20, minBytesPerSecond: 1e6 }).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(refused).toMatchObject({ status: 408 });
  });

  test("a chunked body is kept in a buffer of its size, no unused room", async () => {
    // 70 kB: past the first 64 KiB block (a buffer doubling as it grew held 128 KiB).
    const past = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(70_000) }] });
    const every4k = Array.from({ length: Math.floor((past.length - 1) / 4096) }, (_, i) => (i + 1) * 4096);
    const { source } = await readClientJson(post(past, every4k, false), LIMITS);
    expect(new TextDecoder().decode(source.bytes)).toBe(past);
    expect(source.bytes.buffer.byteLength).toBe(past.length);
  });
});
