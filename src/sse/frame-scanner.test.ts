import { describe, expect, test } from "bun:test";
import { ProxyError } from "../errors.ts";
import { type SseFrame, SseFrameScanner } from "./frame-scanner.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

interface Seen {
  readonly raw: string;
  readonly event: string | undefined;
  readonly data: string | undefined;
  readonly isComment: boolean;
}

function view(frame: SseFrame): Seen {
  return { raw: decoder.decode(frame.raw), event: frame.event, data: frame.data, isComment: frame.isComment };
}

function scanChunks(chunks: readonly Uint8Array[]): Seen[] {
  const scanner = new SseFrameScanner();
  return chunks.flatMap((chunk) => scanner.push(chunk).map(view));
}

function pieces(bytes: Uint8Array, size: number): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out;
}

const FIXTURES: Record<string, string> = {
  lf: 'event: response.created\ndata: {"a":1}\n\ndata: two\ndata: lines\n\n',
  crlf: "event: x\r\ndata: 1\r\n\r\ndata: 2\r\n\r\n",
  cr: "event: x\rdata: 1\r\rdata: 2\r\r",
  mixed: "data: a\r\n\ndata: b\n\r\n: note\r\r",
  comments: ": keepalive\n\n: one\n: two\n\ndata: after\n\n",
  multibyte: 'data: {"t":"héllo 世界 🎉"}\n\n',
  fields: "event:nospace\ndata:x\nid: 7\nretry: 10\nunknown\n\n",
  leadingBlank: "\n\r\ndata: late\n\n",
  unfinished: "data: done\n\ndata: never finished",
};

/** How long one scan of a `size`-byte event fed a byte at a time takes. */
function scanTime(size: number): number {
  const bytes = encoder.encode(`data: ${"x".repeat(size)}\n\n`);
  const scanner = new SseFrameScanner();
  const frames: SseFrame[] = [];
  // Collected first, so that a collection of earlier tests' garbage does not land inside one timing.
  Bun.gc(true);
  const started = performance.now();
  for (let i = 0; i < bytes.length; i++) {
    const found = scanner.push(bytes.subarray(i, i + 1));
    if (found.length > 0) frames.push(...found);
  }
  const elapsed = performance.now() - started;
  expect(frames).toHaveLength(1);
  expect(frames[0]?.data?.length).toBe(size);
  return elapsed;
}

describe("SseFrameScanner", () => {
  test("parses event, data and comment frames", () => {
    const frames = scanChunks([encoder.encode(FIXTURES["lf"] ?? "")]);
    expect(frames).toEqual([
      { raw: 'event: response.created\ndata: {"a":1}\n\n', event: "response.created", data: '{"a":1}', isComment: false },
      { raw: "data: two\ndata: lines\n\n", event: undefined, data: "two\nlines", isComment: false },
    ]);
  });

  test("a comment-only frame has no data and is flagged as a comment", () => {
    const frames = scanChunks([encoder.encode(FIXTURES["comments"] ?? "")]);
    expect(frames.map((f) => [f.isComment, f.data])).toEqual([
      [true, undefined],
      [true, undefined],
      [false, "after"],
    ]);
  });

  test("takes a field with or without the space after its colon and ignores unknown fields", () => {
    const [frame] = scanChunks([encoder.encode(FIXTURES["fields"] ?? "")]);
    expect(frame?.event).toBe("nospace");
    expect(frame?.data).toBe("x");
  });

  test("CR, LF and CRLF all end lines and frames", () => {
    const frames = scanChunks([encoder.encode(FIXTURES["crlf"] ?? "")]);
    expect(frames.map((f) => [f.event, f.data])).toEqual([
      ["x", "1"],
      [undefined, "2"],
    ]);
  });

  test("a frame ending in a bare CR is dispatched when the next byte shows it is no CRLF", () => {
    const scanner = new SseFrameScanner();
    const first = scanner.push(encoder.encode(FIXTURES["cr"] ?? ""));
    expect(first.map((f) => [f.event, f.data])).toEqual([["x", "1"]]);
    const second = scanner.push(encoder.encode("d"));
    expect(second.map((f) => [f.raw.length, f.data])).toEqual([[9, "2"]]);
  });

  test("raw bytes of all frames concatenated are the stream without its unfinished tail", () => {
    for (const text of Object.values(FIXTURES)) {
      const joined = scanChunks([encoder.encode(text)])
        .map((f) => f.raw)
        .join("");
      expect(text.startsWith(joined)).toBe(true);
    }
    const unfinished = scanChunks([encoder.encode(FIXTURES["unfinished"] ?? "")]);
    expect(unfinished.map((f) => f.data)).toEqual(["done"]);
  });

  test("every fixture split at every byte offset into two chunks gives identical frames", () => {
    for (const text of Object.values(FIXTURES)) {
      const bytes = encoder.encode(text);
      const whole = scanChunks([bytes]);
      for (let cut = 0; cut <= bytes.length; cut++) {
        expect(scanChunks([bytes.subarray(0, cut), bytes.subarray(cut)])).toEqual(whole);
      }
    }
  });

  test("1-, 7- and 4096-byte pieces give identical frames", () => {
    const text = Object.values(FIXTURES).slice(0, -1).join("").repeat(50);
    const bytes = encoder.encode(text);
    const whole = scanChunks([bytes]);
    expect(whole.length).toBeGreaterThan(100);
    for (const size of [1, 7, 4096]) expect(scanChunks(pieces(bytes, size))).toEqual(whole);
  });

  test("a CRLF split across chunks is one line end and the frame waits for its LF", () => {
    const scanner = new SseFrameScanner();
    expect(scanner.push(encoder.encode("data: 1\r\n\r"))).toEqual([]);
    expect(scanner.midFrame).toBe(true);
    const frames = scanner.push(encoder.encode("\ndata: 2\r\n\r\n"));
    expect(frames.map(view).map((f) => [f.raw, f.data])).toEqual([
      ["data: 1\r\n\r\n", "1"],
      ["data: 2\r\n\r\n", "2"],
    ]);
  });

  test("a multi-byte character split across chunks decodes intact", () => {
    const bytes = encoder.encode("data: 🎉\n\n");
    const frames = scanChunks([bytes.subarray(0, 8), bytes.subarray(8)]);
    expect(frames.map((f) => f.data)).toEqual(["🎉"]);
  });

  test("a leading BOM is stripped, even when split", () => {
    const bytes = new Uint8Array([0xef, 0xbb, 0xbf, ...encoder.encode("data: x\n\n")]);
    for (let cut = 0; cut <= 4; cut++) {
      const frames = scanChunks([bytes.subarray(0, cut), bytes.subarray(cut)]);
      expect(frames.map((f) => f.raw)).toEqual(["data: x\n\n"]);
    }
  });

  test("midFrame is true only while bytes of an unfinished frame are buffered", () => {
    const scanner = new SseFrameScanner();
    expect(scanner.midFrame).toBe(false);
    scanner.push(encoder.encode("\n"));
    expect(scanner.midFrame).toBe(false);
    scanner.push(encoder.encode("da"));
    expect(scanner.midFrame).toBe(true);
    scanner.push(encoder.encode("ta: x\n"));
    expect(scanner.midFrame).toBe(true);
    expect(scanner.push(encoder.encode("\n"))).toHaveLength(1);
    expect(scanner.midFrame).toBe(false);
    expect(scanner.bufferedBytes).toBe(0);
  });

  test("an event pushed in 1-byte pieces is scanned in linear time (4× the bytes, well under 16× the time)", () => {
    // The fastest of five interleaved scans each, so a burst of load on the machine hits both sizes.
    let small = Number.POSITIVE_INFINITY;
    let large = Number.POSITIVE_INFINITY;
    for (let run = 0; run < 5; run++) {
      small = Math.min(small, scanTime(32 * 1024));
      large = Math.min(large, scanTime(128 * 1024));
    }
    // Linear: about 4×; quadratic: about 16×. A ratio, so a loaded machine slows both alike.
    expect(large / small).toBeLessThan(10);
  }, 30_000);

  test("an unfinished frame beyond maxFrameBytes throws WORKER_BAD_ANSWER", () => {
    const scanner = new SseFrameScanner({ maxFrameBytes: 64 });
    expect(scanner.push(encoder.encode(`data: ${"y".repeat(50)}\n\n`))).toHaveLength(1);
    let thrown: unknown;
    try {
      for (let i = 0; i < 10; i++) scanner.push(encoder.encode("data: 0123456789\n"));
    } catch (error) {
      thrown = error;
    }
    expect(thrown instanceof ProxyError && thrown.code).toBe("WORKER_BAD_ANSWER");
  });

  test("frames many times the frame limit pass when each frame fits", () => {
    const scanner = new SseFrameScanner({ maxFrameBytes: 64 });
    const frames = scanner.push(encoder.encode("data: small\n\n".repeat(1000)));
    expect(frames).toHaveLength(1000);
  });
});
