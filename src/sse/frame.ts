/** One complete SSE frame, its fields decoded from its bytes only when first read. */

export interface SseFrame {
  /** The frame's exact bytes, including its terminating blank line (and any blank lines before it). */
  readonly raw: Uint8Array;
  /** Value of its `event:` line (the last one wins, as in the spec). */
  readonly event: string | undefined;
  /** Data lines joined with "\n"; undefined when the frame has no `data` line. */
  readonly data: string | undefined;
  /** The frame is made only of `:` comment lines (a keepalive). */
  readonly isComment: boolean;
}

// Stateless when used without {stream: true}: each call decodes one complete frame.
const utf8 = new TextDecoder();

interface FrameFields {
  readonly event: string | undefined;
  readonly data: string | undefined;
}

/** Spec field parsing: `name:value`, one optional space after the colon; unknown fields ignored. */
function parseFields(raw: Uint8Array): FrameFields {
  let event: string | undefined;
  const data: string[] = [];
  for (const line of utf8.decode(raw).split(/\r\n|\r|\n/)) {
    if (line === "" || line.startsWith(":")) continue;
    const colon = line.indexOf(":");
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) value = value.slice(1);
    if (name === "event") event = value;
    else if (name === "data") data.push(value);
  }
  return { event, data: data.length === 0 ? undefined : data.join("\n") };
}

/**
 * A frame found by the scanner: bytes [start, end) of `bytes`. A frame scanned in place in
 * the caller's chunk makes no copy nor view until `raw` is read (the relay of chat streams
 * never reads it); one completed in the scanner's reused buffer is copied out at once.
 */
export class ScannedFrame implements SseFrame {
  readonly bytes: Uint8Array;
  readonly start: number;
  readonly end: number;
  readonly isComment: boolean;
  #raw: Uint8Array | undefined;
  #fields: FrameFields | undefined;

  constructor(bytes: Uint8Array, start: number, end: number, isComment: boolean) {
    this.bytes = bytes;
    this.start = start;
    this.end = end;
    this.isComment = isComment;
  }

  get raw(): Uint8Array {
    this.#raw ??= this.start === 0 && this.end === this.bytes.length ? this.bytes : this.bytes.subarray(this.start, this.end);
    return this.#raw;
  }

  get event(): string | undefined {
    return this.#decoded().event;
  }

  get data(): string | undefined {
    return this.#decoded().data;
  }

  #decoded(): FrameFields {
    this.#fields ??= parseFields(this.raw);
    return this.#fields;
  }
}

const D = 0x64;
const A = 0x61;
const T = 0x74;
const COLON = 0x3a;
const SPACE = 0x20;
const LF = 0x0a;
const CR = 0x0d;

/** Where a frame's first `data` line value lies in `bytes`, and how many data lines the frame has. */
export interface DataHead {
  readonly bytes: Uint8Array;
  readonly start: number;
  readonly end: number;
  readonly lines: number;
}

/**
 * Found without decoding or copying, line ends by indexOf: a relay that only looks for a few
 * exact payloads ([DONE], an error object) answers from the bytes. Undefined without a data line.
 */
export function dataHead(frame: SseFrame): DataHead | undefined {
  return frame instanceof ScannedFrame ? dataHeadIn(frame.bytes, frame.start, frame.end) : dataHeadIn(frame.raw, 0, frame.raw.length);
}

/** dataHead of the frame that is bytes [from, to). */
export function dataHeadIn(bytes: Uint8Array, from: number, to: number, hasCr = true): DataHead | undefined {
  let valueStart = -1;
  let valueEnd = -1;
  let lines = 0;
  // Without a CR in the frame, no search for one: it would run on to the end of the chunk.
  let cr = hasCr ? bound(bytes.indexOf(CR, from), to) : -1;
  for (let start = from; start < to;) {
    if (cr !== -1 && cr < start) cr = bound(bytes.indexOf(CR, start), to);
    const lf = bound(bytes.indexOf(LF, start), to);
    const end = cr !== -1 && (lf === -1 || cr < lf) ? cr : lf === -1 ? to : lf;
    if (isDataLine(bytes, start, end)) {
      lines++;
      if (valueStart === -1) {
        valueStart = Math.min(end, start + 5);
        if (valueStart < end && bytes[valueStart] === SPACE) valueStart++;
        valueEnd = end;
      }
    }
    start = end === cr && bytes[end + 1] === LF ? end + 2 : end + 1;
  }
  return valueStart === -1 ? undefined : { bytes, start: valueStart, end: valueEnd, lines };
}

function bound(index: number, to: number): number {
  return index >= to ? -1 : index;
}

/** `data` alone or `data:…` (a field named exactly "data"). */
function isDataLine(bytes: Uint8Array, start: number, end: number): boolean {
  if (end - start < 4 || bytes[start] !== D || bytes[start + 1] !== A || bytes[start + 2] !== T || bytes[start + 3] !== A) return false;
  return end - start === 4 || bytes[start + 4] === COLON;
}

/** The first data line's value begins with these bytes. */
export function headStartsWith(head: DataHead, prefix: Uint8Array): boolean {
  if (head.end - head.start < prefix.length) return false;
  for (let i = 0; i < prefix.length; i++) if (head.bytes[head.start + i] !== prefix[i]) return false;
  return true;
}

/** The frame's data (its data lines joined by "\n") begins with these bytes, which hold no line break. */
export function dataStartsWith(frame: SseFrame, prefix: Uint8Array): boolean {
  const head = dataHead(frame);
  return head !== undefined && headStartsWith(head, prefix);
}

/** The frame's data is exactly these bytes, which hold no line break. */
export function dataIs(frame: SseFrame, value: Uint8Array): boolean {
  const head = dataHead(frame);
  return head !== undefined && isExactly(head, value);
}

export function isExactly(head: DataHead, value: Uint8Array): boolean {
  return head.lines === 1 && head.end - head.start === value.length && headStartsWith(head, value);
}

/** Index just past the first line terminator (LF, CRLF or CR) at or after `from`, or the length. */
export function afterFirstLine(bytes: Uint8Array, from: number): number {
  const lf = bytes.indexOf(LF, from);
  const cr = bytes.indexOf(CR, from);
  if (cr === -1 || (lf !== -1 && lf < cr)) return lf === -1 ? bytes.length : lf + 1;
  return bytes[cr + 1] === LF ? cr + 2 : cr + 1;
}
