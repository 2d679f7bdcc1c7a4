/**
 * Property tests of the SSE frame scanner: random event sequences (data, event, id, retry,
 * unknown fields, comments; LF, CRLF or CR line ends; blank lines between events; any Unicode
 * in values) cut into random chunks, including empty ones and cuts inside UTF-8 sequences.
 */
import { describe, expect, test } from "bun:test";
import * as fc from "fast-check";
import { type SseFrame, SseFrameScanner } from "./frame-scanner.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();
// Generous: CI machines are shared, and bun test allows 5 s per test by default.
const TIMEOUT_MS = 30_000;
const RUNS = 3000;

type Line = { readonly field: "data" | "event" | "id" | "retry" | "x-unknown" | ""; readonly value: string };
interface Event {
  readonly lines: readonly Line[];
  readonly end: "\n" | "\r\n" | "\r";
  readonly blanksBefore: number;
}

// Any well-formed text without line breaks; a field line starts with its name, never a BOM.
const value = fc.string({ unit: "grapheme", maxLength: 24 }).map((text) => text.replace(/[\r\n]/g, " "));
const line: fc.Arbitrary<Line> = fc.record({
  field: fc.constantFrom("data", "data", "event", "id", "retry", "x-unknown", ""),
  value,
});
const event: fc.Arbitrary<Event> = fc.record({
  lines: fc.array(line, { minLength: 1, maxLength: 5 }),
  end: fc.constantFrom("\n", "\r\n", "\r"),
  blanksBefore: fc.nat({ max: 2 }),
});

/** The encoded stream. Its last byte is never a bare CR, which waits for a next byte. */
function encode(events: readonly Event[]): Uint8Array {
  const text = events
    .map((e, i) => {
      const body = e.lines.map((l) => (l.field === "" ? `:${l.value}` : `${l.field}: ${l.value}`) + e.end).join("");
      const last = i === events.length - 1 && e.end === "\r";
      return e.end.repeat(e.blanksBefore) + body + (last ? "\r\n" : e.end);
    })
    .join("");
  return encoder.encode(text);
}

/** What a spec-following client sees for each event. */
function expected(e: Event): { event: string | undefined; data: string | undefined; isComment: boolean } {
  const data = e.lines.filter((l) => l.field === "data").map((l) => l.value);
  const named = e.lines.findLast((l) => l.field === "event");
  return {
    event: named?.value,
    data: data.length === 0 ? undefined : data.join("\n"),
    isComment: e.lines.every((l) => l.field === ""),
  };
}

/** Cut points anywhere in the input (fractions keep them valid whatever its length). */
const cuts = fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 30 });

function chunked(bytes: Uint8Array, fractions: readonly number[]): Uint8Array[] {
  const points = fractions.map((f) => Math.floor(f * bytes.length)).toSorted((a, b) => a - b);
  const chunks: Uint8Array[] = [];
  let from = 0;
  for (const point of [...points, bytes.length]) {
    chunks.push(bytes.subarray(from, point));
    from = point;
  }
  return chunks;
}

interface Scan {
  readonly frames: SseFrame[];
  readonly maxBuffered: number;
}

function scan(chunks: readonly Uint8Array[]): Scan {
  const scanner = new SseFrameScanner();
  const frames: SseFrame[] = [];
  let maxBuffered = 0;
  for (const chunk of chunks) {
    frames.push(...scanner.push(chunk));
    maxBuffered = Math.max(maxBuffered, scanner.bufferedBytes);
  }
  return { frames, maxBuffered };
}

const view = (f: SseFrame) => ({ raw: decoder.decode(f.raw), event: f.event, data: f.data, isComment: f.isComment });
const events = fc.array(event, { minLength: 1, maxLength: 12 });

describe("SseFrameScanner properties", () => {
  test(
    "any chunking of any encoded event sequence gives the same frames as one chunk",
    () => {
      fc.assert(
        fc.property(events, cuts, (sequence, fractions) => {
          const bytes = encode(sequence);
          expect(scan(chunked(bytes, fractions)).frames.map(view)).toEqual(scan([bytes]).frames.map(view));
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );

  test(
    "each frame carries its event's name, data and comment flag",
    () => {
      fc.assert(
        fc.property(events, cuts, (sequence, fractions) => {
          const { frames } = scan(chunked(encode(sequence), fractions));
          const seen = frames.map((f) => ({ event: f.event, data: f.data, isComment: f.isComment }));
          expect(seen).toEqual(sequence.map(expected));
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );

  test(
    "the frames' raw bytes concatenated are the input: scanning never alters a byte",
    () => {
      fc.assert(
        fc.property(events, cuts, (sequence, fractions) => {
          const bytes = encode(sequence);
          const raws = scan(chunked(bytes, fractions)).frames.map((f) => f.raw);
          expect(Buffer.concat(raws).equals(bytes)).toBe(true);
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );

  test(
    "bufferedBytes never exceeds the largest frame, whatever the chunking",
    () => {
      fc.assert(
        fc.property(events, cuts, (sequence, fractions) => {
          const { frames, maxBuffered } = scan(chunked(encode(sequence), fractions));
          expect(maxBuffered).toBeLessThanOrEqual(Math.max(...frames.map((f) => f.raw.length)));
        }),
        { numRuns: RUNS },
      );
    },
    TIMEOUT_MS,
  );

  test(
    "a stream ending in a bare CR holds back only its last frame until the next byte",
    () => {
      fc.assert(
        fc.property(events, cuts, (sequence, fractions) => {
          const bytes = encode(sequence);
          const cut = bytes.subarray(0, bytes.length - 1); // the final "\r\n" loses its LF
          if (cut.at(-1) !== 0x0d) return;
          const whole = scan([bytes]).frames;
          const { frames } = scan(chunked(cut, fractions));
          expect(frames.map(view)).toEqual(whole.slice(0, -1).map(view));
        }),
        { numRuns: 1000 },
      );
    },
    TIMEOUT_MS,
  );
});
