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

  test("a body that comes whole in one piece of its own is kept as that piece; a view into a larger buffer is copied", () => {
    const piece = pattern(100_000);
    const gathered = new DeclaredBodyBuffer(100_000);
    expect(gathered.append(piece)).toBe(true);
    expect(gathered.bytes()).toBe(piece);
    expect(gathered.append(new Uint8Array(1))).toBe(false);
    const larger = pattern(100_010);
    const view = new DeclaredBodyBuffer(100_000);
    view.append(larger.subarray(10));
    expect(view.bytes().buffer).not.toBe(larger.buffer);
    expect(Buffer.compare(view.bytes(), larger.subarray(10))).toBe(0);
  });

  test("a body shorter than declared shows only what came", () => {
    const gathered = new DeclaredBodyBuffer(100);
    expect(gathered.bytes()).toHaveLength(0);
    gathered.append(pattern(40));
    expect(Buffer.compare(gathered.bytes(), pattern(40))).toBe(0);
  });
});
