import { describe, expect, test } from "bun:test";
import { ResponseFraming } from "./response-framing.ts";

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

/** Feeds the text in pieces of `size` bytes; returns the responses ended after each piece. */
function feedInPieces(text: string, size: number): number[] {
  const framing = new ResponseFraming();
  const all = bytes(text);
  const ends: number[] = [];
  for (let at = 0; at < all.length; at += size) ends.push(framing.feed(all.subarray(at, at + size)));
  return ends;
}

const LENGTH = "HTTP/1.1 200 OK\r\ncontent-length: 5\r\ncontent-type: text/plain\r\n\r\nhello";
const CHUNKED = "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n3;ext=1\r\nabc\r\n0\r\n\r\n";
const TRAILER = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n2\r\nhi\r\n0\r\nx-done: 1\r\n\r\n";

describe("ResponseFraming", () => {
  test("a Content-Length response ends with its last body byte, whatever the pieces", () => {
    for (const size of [1, 3, 1000]) {
      const ends = feedInPieces(LENGTH + LENGTH, size);
      expect(ends.reduce((a, b) => a + b, 0)).toBe(2);
      expect(ends.at(-1)).toBeGreaterThan(0);
    }
  });

  test("a chunked response ends with its last chunk and trailer section, not before", () => {
    for (const text of [CHUNKED, TRAILER]) {
      for (const size of [1, 2, 7, 4096]) {
        const ends = feedInPieces(text, size);
        expect(ends.reduce((a, b) => a + b, 0)).toBe(1);
        expect(ends.at(-1)).toBe(1);
      }
    }
  });

  test("a chunk whose data holds a terminator's bytes does not end the response", () => {
    const body = "0\r\n\r\n";
    const text = `HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n`;
    const framing = new ResponseFraming();
    expect(framing.feed(bytes(text))).toBe(0);
    expect(framing.feed(bytes("0\r\n\r\n"))).toBe(1);
  });

  test("interim, empty and no-content responses are framed as such", () => {
    const framing = new ResponseFraming();
    expect(framing.feed(bytes("HTTP/1.1 100 Continue\r\n\r\n"))).toBe(0);
    expect(framing.feed(bytes("HTTP/1.1 204 No Content\r\n\r\n"))).toBe(1);
    expect(framing.feed(bytes("HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n"))).toBe(1);
  });

  test("a response without length or chunks ends only with the connection", () => {
    const framing = new ResponseFraming();
    expect(framing.feed(bytes("HTTP/1.1 200 OK\r\n\r\nsome bytes"))).toBe(0);
    expect(framing.feed(bytes(LENGTH))).toBe(0);
  });
});
