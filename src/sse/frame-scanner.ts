/**
 * Byte-level incremental SSE frame scanner for the relay hot path. It finds frame boundaries
 * without decoding text, so a pass-through relay can forward bytes untouched and still know
 * where frames end; a frame's fields are decoded only when read, from its complete bytes.
 */
import { ProxyError } from "../errors.ts";
import { afterFirstLine, ScannedFrame, type SseFrame } from "./frame.ts";

export type { SseFrame } from "./frame.ts";

/**
 * Receives each complete frame as bytes [start, end). `lent`: the bytes are the scanner's own
 * buffer, valid only during the call; otherwise they are the caller's chunk. `hasCr`: some
 * line of the frame ends in CR or CRLF (a CR can be nothing else in SSE). A method, not a
 * callback: a stream's own state object can be its sink, with no closure kept per stream.
 */
export interface FrameSink {
  frame(bytes: Uint8Array, start: number, end: number, isComment: boolean, lent: boolean, hasCr: boolean): void;
}

export interface SseFrameScannerOptions {
  /** Largest unfinished frame kept in memory; more throws WORKER_BAD_ANSWER. Default 16 MiB. */
  readonly maxFrameBytes?: number;
}

const DEFAULT_MAX_FRAME_BYTES = 16 * 1024 * 1024;
const MIN_CAPACITY = 256;
const SHRINK_ABOVE = 64 * 1024;
const LF = 0x0a;
const CR = 0x0d;
const COLON = 0x3a;
const BOM = [0xef, 0xbb, 0xbf] as const;
const EMPTY = new Uint8Array(0);

export class SseFrameScanner {
  readonly #maxFrameBytes: number;
  // Only an unfinished frame is kept, at the start of this buffer (allocated on first need);
  // the rest of a chunk is scanned where it lies. Relayed chunks are up to 16 KiB and split
  // frames anywhere: copying them whole cost more than the scan itself.
  #buf: Uint8Array = EMPTY;
  #len = 0;
  #scanned = 0; // bytes before this index were already examined; never scanned twice
  #lineStart = 0;
  #frameStart = 0;
  #frameHasContent = false; // a non-blank line was seen in the current frame
  #frameHasField = false; // a non-comment line was seen in the current frame
  #frameHasCr = false; // a line of the current frame ended in CR or CRLF
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

  /** Between frames, with nothing kept: a chunk of whole frames may be judged without the scanner. */
  get idle(): boolean {
    return this.#bomResolved && this.#len === 0;
  }

  get bufferedBytes(): number {
    return this.#len;
  }

  /** Complete frames found in the stream so far, in order. */
  push(chunk: Uint8Array): SseFrame[] {
    const frames: SseFrame[] = [];
    this.scan(chunk, {
      frame(bytes, start, end, isComment, lent) {
        frames.push(
          lent ? new ScannedFrame(bytes.slice(start, end), 0, end - start, isComment) : new ScannedFrame(bytes, start, end, isComment),
        );
      },
    });
    return frames;
  }

  /** As push, with no object per frame: for a relay that only glances at each frame's bytes. */
  scan(chunk: Uint8Array, frames: FrameSink): void {
    let pos = 0;
    if (!this.#bomResolved) {
      // Decided by the chunk itself when it can be: the first chunk is not copied to be looked at.
      const bom = this.#len === 0 ? bomIn(chunk) : undefined;
      if (bom !== undefined) {
        this.#bomResolved = true;
        pos = bom ? BOM.length : 0;
      } else {
        this.#append(chunk);
        if (!this.#resolveBom()) return;
        pos = chunk.length;
        this.#scanBuffered(frames);
      }
    }
    // An unfinished frame is completed line by line, so only its own bytes are copied.
    while (this.#len > 0 && pos < chunk.length) {
      const cut = afterFirstLine(chunk, pos);
      this.#append(chunk.subarray(pos, cut));
      this.#scanBuffered(frames);
      pos = cut;
    }
    if (pos < chunk.length) {
      // Nothing kept from before: the scan goes on in the chunk itself, from pos.
      this.#scanned = pos;
      this.#lineStart = pos;
      this.#frameStart = pos;
      this.#scan(chunk, true, frames);
      this.#retain(chunk, true);
    }
    if (this.#len - this.#frameStart > this.#maxFrameBytes) {
      throw new ProxyError("WORKER_BAD_ANSWER", 502, "Upstream sent an event larger than the frame limit");
    }
  }

  #scanBuffered(frames: FrameSink): void {
    // A view ends the native searches at len: the capacity beyond may be large and stale.
    this.#scan(this.#buf.subarray(0, this.#len), false, frames);
    this.#retain(this.#buf, false);
  }

  #append(chunk: Uint8Array): void {
    const needed = this.#len + chunk.length;
    if (needed > this.#buf.length) this.#resize(needed);
    this.#buf.set(chunk, this.#len);
    this.#len = needed;
  }

  #resize(needed: number): void {
    let capacity = Math.max(MIN_CAPACITY, this.#buf.length * 2);
    while (capacity < needed) capacity *= 2;
    const grown = new Uint8Array(capacity);
    grown.set(this.#buf.subarray(0, this.#len));
    this.#buf = grown;
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

  /**
   * Finds line ends in bytes not yet examined. Line ends are searched with indexOf (native),
   * not byte by byte; a CR is rarer than an LF in practice, so its position is kept until passed.
   */
  #scan(src: Uint8Array, inPlace: boolean, frames: FrameSink): void {
    const len = src.length;
    let i = this.#scanned;
    if (this.#crAt !== -1 && i < len) {
      const crAt = this.#crAt;
      this.#crAt = -1;
      const crlf = src[i] === LF;
      this.#endLine(src, inPlace, crAt, crlf ? i + 1 : crAt + 1, frames);
      if (crlf) i++;
    }
    let cr = src.indexOf(CR, i);
    while (i < len) {
      if (cr !== -1 && cr < i) cr = src.indexOf(CR, i);
      const lf = src.indexOf(LF, i);
      if (cr === -1 || (lf !== -1 && lf < cr)) {
        if (lf === -1) break;
        this.#endLine(src, inPlace, lf, lf + 1, frames);
        i = lf + 1;
      } else if (cr + 1 === len) {
        this.#crAt = cr; // decided by the next chunk's first byte
        break;
      } else {
        const end = src[cr + 1] === LF ? cr + 2 : cr + 1;
        this.#endLine(src, inPlace, cr, end, frames);
        i = end;
      }
    }
    this.#scanned = len;
  }

  /** A line [lineStart, contentEnd) ended with a terminator ending at terminatorEnd. */
  #endLine(src: Uint8Array, inPlace: boolean, contentEnd: number, terminatorEnd: number, frames: FrameSink): void {
    const lineStart = this.#lineStart;
    this.#lineStart = terminatorEnd;
    if (src[contentEnd] === CR) this.#frameHasCr = true;
    if (contentEnd > lineStart) {
      this.#frameHasContent = true;
      if (src[lineStart] !== COLON) this.#frameHasField = true;
      return;
    }
    // A blank line before any content is kept in the next frame's raw bytes, so the frames'
    // raw bytes concatenated are the stream itself.
    if (!this.#frameHasContent) return;
    frames.frame(src, this.#frameStart, terminatorEnd, !this.#frameHasField, !inPlace, this.#frameHasCr);
    this.#frameStart = terminatorEnd;
    this.#frameHasContent = false;
    this.#frameHasField = false;
    this.#frameHasCr = false;
  }

  /** Keeps only the unfinished frame, at the buffer's start (after an in-place scan: copied in). */
  #retain(src: Uint8Array, inPlace: boolean): void {
    const shift = this.#frameStart;
    if (inPlace) {
      const tail = src.length - shift;
      if (tail > this.#buf.length) this.#resize(tail);
      if (tail > 0) this.#buf.set(src.subarray(shift), 0);
      this.#len = tail;
    } else {
      if (shift === 0) return;
      this.#buf.copyWithin(0, shift, this.#len);
      this.#len -= shift;
      this.#shrink();
    }
    // Nothing unfinished: an idle stream keeps no buffer.
    if (this.#len === 0) this.#buf = EMPTY;
    this.#scanned -= shift;
    this.#lineStart -= shift;
    if (this.#crAt !== -1) this.#crAt -= shift;
    this.#frameStart = 0;
  }

  // One huge event must not pin its buffer for the rest of a long stream.
  #shrink(): void {
    if (this.#buf.length <= SHRINK_ABOVE || this.#len * 4 > this.#buf.length) return;
    const smaller = new Uint8Array(Math.max(MIN_CAPACITY, this.#len * 2));
    smaller.set(this.#buf.subarray(0, this.#len));
    this.#buf = smaller;
  }
}

/** Whether the chunk starts with a BOM; undefined while too short to tell. */
function bomIn(chunk: Uint8Array): boolean | undefined {
  for (let i = 0; i < BOM.length; i++) {
    if (i === chunk.length) return undefined;
    if (chunk[i] !== BOM[i]) return false;
  }
  return true;
}
