import { describe, expect, test } from "bun:test";
import { ResponseParser } from "./response-parser.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

function parse(pieces: readonly string[]): { status: number; body: string; ends: boolean[] } {
  const seen = { status: 0, body: "", ends: [] as boolean[] };
  const parser = new ResponseParser({
    head: (status) => (seen.status = status),
    body: (bytes) => (seen.body += decoder.decode(bytes)),
    end: (reusable) => seen.ends.push(reusable),
  });
  for (const piece of pieces) parser.push(encoder.encode(piece));
  return seen;
}

/** Every way of cutting the text in two. */
function everySplit(text: string): string[][] {
  return Array.from({ length: text.length + 1 }, (_, i) => [text.slice(0, i), text.slice(i)]);
}

describe("ResponseParser", () => {
  const lengthed = 'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\nContent-Length: 11\r\n\r\n{"ok":true}';
  const chunked = "HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n5\r\ndata:\r\n4;ext=1\r\n x\n\n\r\n0\r\n\r\n";

  test("reads a content-length body, whatever the split", () => {
    for (const pieces of everySplit(lengthed)) expect(parse(pieces)).toEqual({ status: 200, body: '{"ok":true}', ends: [true] });
  });

  test("removes chunked framing, chunk extensions included, whatever the split", () => {
    for (const pieces of everySplit(chunked)) expect(parse(pieces)).toEqual({ status: 200, body: "data: x\n\n", ends: [true] });
  });

  test("a server that asks to close makes the connection not reusable", () => {
    const closing = "HTTP/1.1 503 Service Unavailable\r\nconnection: close\r\ncontent-length: 0\r\n\r\n";
    expect(parse([closing])).toEqual({ status: 503, body: "", ends: [false] });
  });

  test("bytes after the end of the response are an error", () => {
    expect(() => parse([`${lengthed}HTTP/1.1`])).toThrow("after the response");
  });
});
