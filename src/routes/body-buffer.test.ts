import { describe, expect, test } from "bun:test";
import { ChunkedBodyBuffer, DeclaredBodyBuffer } from "./body-buffer.ts";

/** Bytes 0..n-1 of a pattern that shows any piece out of place. */
function pattern(length: number): Uint8Array {
  return Uint8Array.from({ length }, (_, i) => (i * 31 + (i >> 8)) & 0xff);
}

describe("ChunkedBodyBuffer", () => {
  test("pieces straddling its blocks, past the largest block size, come back byte for byte in a buffer of the body's size", () => {
    const body = pattern(3 * 1024 * 1024 + 12_345);
    const gathered = new ChunkedBodyBuffer();
    // Odd piece sizes, so pieces straddle every block boundary; slices, as the runtime hands them.
    for (let at = 0, step = 1; at < body.length; at += step, step = (step * 7 + 13) % 90_001) gathered.append(body.slice(at, at + step));
    expect(gathered.size).toBe(body.length);
    const bytes = gathered.bytes();
    expect(bytes.buffer.byteLength).toBe(body.length);
    expect(Buffer.compare(bytes, body)).toBe(0);
  });

  test("an empty body is empty", () => {
    expect(new ChunkedBodyBuffer().bytes()).toHaveLength(0);
  });
});

describe("DeclaredBodyBuffer", () => {
  test("fills its declared length in place and refuses a piece past it", () => {
    const body = pattern(1000);
    const gathered = new DeclaredBodyBuffer(1000);
    expect(gathered.append(body.slice(0, 600))).toBe(true);
    expect(gathered.append(body.slice(600))).toBe(true);
    expect(Buffer.compare(gathered.bytes(), body)).toBe(0);
    expect(gathered.append(new Uint8Array(1))).toBe(false);
  });
});
