import { describe, expect, test } from "bun:test";
import { readBounded } from "./answers.ts";

/** What the promise rejected with (a test fails if it resolved). */
async function failure(promise: Promise<unknown>): Promise<string> {
  return promise.then(
    () => "resolved",
    (error: unknown) => (error instanceof Error ? error.message : String(error)),
  );
}

function streamOf(size: number): ReadableStream<Uint8Array> {
  return new ReadableStream({
    start(controller) {
      for (let sent = 0; sent < size; sent += 1000) controller.enqueue(new Uint8Array(Math.min(1000, size - sent)).fill(0x61));
      controller.close();
    },
  });
}

describe("readBounded", () => {
  test("an answer that declares its length within the bound is read whole", async () => {
    const body = "x".repeat(5000);
    const bytes = await readBounded(new Response(body, { headers: { "content-length": "5000" } }), 5000);
    expect(new TextDecoder().decode(bytes)).toBe(body);
  });

  test("an answer that declares a length beyond the bound is refused unread", async () => {
    const response = new Response(streamOf(10_000), { headers: { "content-length": "10000" } });
    expect(await failure(readBounded(response, 5000))).toContain("larger than 5000 bytes");
  });

  test("an answer without a declared length is refused once it passes the bound", async () => {
    expect(await failure(readBounded(new Response(streamOf(10_000)), 5000))).toContain("larger than 5000 bytes");
    expect((await readBounded(new Response(streamOf(5000)), 5000)).byteLength).toBe(5000);
  });

  test("a compressed answer's declared length does not bound what arrives: it is counted as read", async () => {
    const response = new Response(streamOf(10_000), { headers: { "content-length": "10", "content-encoding": "gzip" } });
    expect(await failure(readBounded(response, 5000))).toContain("larger than 5000 bytes");
  });
});
