/**
 * The chat dialect judges chunks of whole one-line data frames without its scanner: over random
 * worker streams (token frames, [DONE], in-band errors, comments, multi-line and CRLF frames,
 * blank lines, a BOM) cut into random chunks, it must see exactly what the scanner alone sees.
 */
import { describe, expect, test } from "bun:test";
import * as fc from "fast-check";
import { SseFrameScanner } from "../sse/frame-scanner.ts";
import { dataHeadIn, headStartsWith, isExactly } from "../sse/frame.ts";
import { openAiStream } from "./openai.ts";

const encoder = new TextEncoder();
const DONE = encoder.encode("[DONE]");
const ERROR = encoder.encode('{"error"');

const token = fc
  .string({ unit: "grapheme", maxLength: 12 })
  .map((text) => `data: ${JSON.stringify({ choices: [{ delta: { content: text } }] })}\n\n`);
const frame = fc.oneof(
  { weight: 6, arbitrary: token },
  fc.constant("data: [DONE]\n\n"),
  fc.constant('data: {"error":{"message":"worker failed"}}\n\n'),
  fc.constant("data: [1,2]\n\n"),
  fc.constant(": keepalive\n\n"),
  fc.constant("event: x\ndata: {}\n\n"),
  fc.constant("data: a\ndata: b\n\n"),
  fc.constant("data: 1\n:data: 2\n\n"),
  fc.constant("data: {}\r\n\r\n"),
  fc.constant("data:{}\n\n"),
  fc.constant("\n"),
);

/** What the scanner alone finds: [DONE], the first in-band error, and whether a frame is unfinished. */
class Reference {
  readonly scanner = new SseFrameScanner();
  done = false;
  error = false;

  push(chunk: Uint8Array): void {
    this.scanner.scan(chunk, this);
  }

  frame(bytes: Uint8Array, start: number, end: number, _isComment: boolean, _lent: boolean, hasCr: boolean): void {
    const head = dataHeadIn(bytes, start, end, hasCr);
    if (head === undefined) return;
    if (isExactly(head, DONE)) this.done = true;
    else if (headStartsWith(head, ERROR)) this.error = true;
  }
}

/** The stream's bytes cut at the given points. */
function cut(bytes: Uint8Array, points: readonly number[]): Uint8Array[] {
  const at = [...new Set(points.map((point) => point % (bytes.length + 1)))].toSorted((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let from = 0;
  for (const to of [...at, bytes.length]) {
    chunks.push(bytes.subarray(from, to));
    from = to;
  }
  return chunks;
}

describe("the chat dialect", () => {
  test("sees what its scanner alone sees, however the worker's stream is cut", () => {
    fc.assert(
      fc.property(fc.boolean(), fc.array(frame, { maxLength: 24 }), fc.array(fc.nat(), { maxLength: 12 }), (bom, frames, points) => {
        const bytes = encoder.encode(`${bom ? "\uFEFF" : ""}${frames.join("")}`);
        const dialect = openAiStream();
        const reference = new Reference();
        for (const chunk of cut(bytes, points)) {
          expect(dialect.push(chunk)).toBe(chunk);
          reference.push(chunk);
          expect(dialect.delivered).toBe(reference.done || reference.error);
          expect(dialect.workerError !== undefined).toBe(reference.error);
          expect(dialect.keepalive() === undefined).toBe(reference.scanner.midFrame);
        }
      }),
      { numRuns: 3000 },
    );
  });
});
