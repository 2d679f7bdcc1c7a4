/**
 * Byte-level incremental SSE frame scanner for the relay hot path. It finds frame boundaries
 * without decoding text, so a pass-through relay can forward bytes untouched and still know
 * where frames end; a frame's fields are decoded only when read, from its complete bytes.
 */
import { ProxyError } from "../errors.ts";
import { ScannedFrame, type SseFrame } from "./frame.ts";

export type { SseFrame } from "./frame.ts";

export interface SseFrameScannerOptions {
  /** Largest unfinished frame kept in memory; more throws WORKER_BAD_ANSWER. Default 16 MiB. */
  readonly maxFrameBytes?: number;
}

const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;
const INITIAL_CAPACITY = 4096;
const SHRINK_ABOVE = 64 * 1024;
const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const BOM = [0xef, 0xbb, 0xbf] as const;

export class SseFrameScanner {
  readonly #maxFrameBytes: number;
  // One growable buffer reused for the whole stream: bytes of the unfinished frame live at its
  // start, so a frame arriving one byte at a time costs amortised O(1) per byte.
  #buf = new Uint8Array(INITIAL_CAPACITY);
  #len = 0;
  #scanned = 0; // bytes before this index were already examined; never scanned twice
  #lineStart = 0;
  #frameStart = 0;
  #frameHasContent = false; // a non-blank line was seen in the current frame
  #frameHasField = false; // a non-comment line was seen in the current frame
  // A CR ended a line; it is resolved by the next byte, which may be the LF of a CRLF split
  // across chunks. The frame is not dispatched before that, so its raw bytes stay exact.
  #crAt = -1;
  #bomResolved = false;

  constructor(options: SseFrameScannerOptions = {}) {
    this.#maxFrameBytes = options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES;
  }

  /** Bytes of an unfinished frame are buffered (blank lines alone do not count). */
  get midFrame(): boolean {
    if (this.#frameHasContent) return true;
    const lineEnd = this.#crAt === -1 ? this.#len : this.#crAt;
    return lineEnd > this.#lineStart;
  }

  get bufferedBytes(): number {
    return this.#len;
  }

  /** Complete frames found in the stream so far, in order. */
  push(chunk: Uint8Array): SseFrame[] {
    this.#append(chunk);
    if (!this.#bomResolved && !this.#resolveBom()) return [];
    const frames: SseFrame[] = [];
    this.#scan(frames);
    this.#compact();
    if (this.#len - this.#frameStart > this.#maxFrameBytes) {
      throw new ProxyError("WORKER_BAD_ANSWER", 502, "Upstream sent an event larger than the frame limit");
    }
    return frames;
  }

  #append(chunk: Uint8Array): void {
    const needed = this.#len + chunk.length;
    if (needed > this.#buf.length) {
      let capacity = this.#buf.length * 2;
      while (capacity < needed) capacity *= 2;
      const grown = new Uint8Array(capacity);
      grown.set(this.#buf.subarray(0, this.#len));
      this.#buf = grown;
    }
    this.#buf.set(chunk, this.#len);
    this.#len = needed;
  }

  /** Strips a leading BOM, which may itself arrive split. Returns false while undecided. */
  #resolveBom(): boolean {
    const seen = Math.min(this.#len, BOM.length);
    for (let i = 0; i < seen; i++) {
      if (this.#buf[i] !== BOM[i]) {
        this.#bomResolved = true;
        return true;
      }
    }
    if (seen < BOM.length) return false;
    this.#buf.copyWithin(0, BOM.length, this.#len);
    this.#len -= BOM.length;
    this.#bomResolved = true;
    return true;
  }

  #scan(frames: SseFrame[]): void {
    const buf = this.#buf;
    for (let i = this.#scanned; i < this.#len; i++) {
      const byte = buf[i];
      if (this.#crAt !== -1) {
        const crAt = this.#crAt;
        this.#crAt = -1;
        if (byte === LF) {
          this.#endLine(crAt, i + 1, frames);
          continue;
        }
        this.#endLine(crAt, crAt + 1, frames);
      }
      if (byte === LF) this.#endLine(i, i + 1, frames);
      else if (byte === CR) this.#crAt = i;
    }
    this.#scanned = this.#len;
  }

  /** A line [lineStart, contentEnd) ended with a terminator ending at terminatorEnd. */
  #endLine(contentEnd: number, terminatorEnd: number, frames: SseFrame[]): void {
    const lineStart = this.#lineStart;
    this.#lineStart = terminatorEnd;
    if (contentEnd > lineStart) {
      this.#frameHasContent = true;
      if (this.#buf[lineStart] !== COLON) this.#frameHasField = true;
      return;
    }
    // A blank line before any content is kept in the next frame's raw bytes, so the frames'
    // raw bytes concatenated are the stream itself.
    if (!this.#frameHasContent) return;
    const raw = this.#buf.slice(this.#frameStart, terminatorEnd);
    frames.push(new ScannedFrame(raw, !this.#frameHasField));
    this.#frameStart = terminatorEnd;
    this.#frameHasContent = false;
    this.#frameHasField = false;
  }

  /** Moves the unfinished frame to the buffer's start; it holds only bytes of recent pushes. */
  #compact(): void {
    const shift = this.#frameStart;
    if (shift === 0) return;
    this.#buf.copyWithin(0, shift, this.#len);
    this.#len -= shift;
    this.#scanned -= shift;
    this.#lineStart -= shift;
    if (this.#crAt !== -1) this.#crAt -= shift;
    this.#frameStart = 0;
    this.#shrinkAfterLargeFrame();
  }

  // One huge event must not pin its buffer for the rest of a long stream.
  #shrinkAfterLargeFrame(): void {
    if (this.#buf.length <= SHRINK_ABOVE || this.#len * 4 > this.#buf.length) return;
    const smaller = new Uint8Array(Math.max(INITIAL_CAPACITY, this.#len * 2));
    smaller.set(this.#buf.subarray(0, this.#len));
    this.#buf = smaller;
  }
}
