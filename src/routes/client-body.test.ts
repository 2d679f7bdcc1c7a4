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
      expect(new TextDecoder().decode(source.bytes.subarray(member?.start, member?.end))).toBe(`"messages":${JSON.stringify(body["messages"])}`);
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
});
