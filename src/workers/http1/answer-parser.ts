/**
 * One HTTP/1.1 answer parsed as its bytes arrive (RFC 9112): the status line and headers within
 * a size bound, then a body framed by Content-Length, chunked coding, or the connection's close.
 * Interim 1xx answers are skipped. The body's bytes go to the sink as views of what arrived.
 */

export interface AnswerHead {
  readonly status: number;
  readonly statusText: string;
  readonly headers: Headers;
  /** The body's length where Content-Length frames it; undefined for chunked, close-framed, 204 and 304. */
  readonly length: number | undefined;
}

export interface AnswerSink {
  head(head: AnswerHead): void;
  /** Body bytes, de-chunked: a view of one socket read's buffer, which the runtime does not reuse (a kept view stays valid). */
  body(bytes: Uint8Array): void;
  end(): void;
}

/** A framing the parser refuses: the connection cannot be trusted for another answer. */
export class AnswerFramingError extends Error {
  override readonly name = "AnswerFramingError";
}

const CR = 0x0d;
const LF = 0x0a;
/** A chunk-size line (with extensions) or a trailer line longer than this is refused. */
const MAX_LINE_BYTES = 4096;
const latin1 = new TextDecoder("latin1");

type State = "head" | "length" | "chunk-size" | "chunk-data" | "chunk-end" | "trailers" | "until-close" | "done";

export class AnswerParser {
  #state: State = "head";
  #held: Uint8Array | undefined;
  #remaining = 0;
  #line = "";
  #reusable = true;
  /** An interim (1xx) answer came: the worker read the request. */
  #interim = false;
  readonly #sink: AnswerSink;
  readonly #maxHeadBytes: number;

  constructor(sink: AnswerSink, maxHeadBytes: number) {
    this.#sink = sink;
    this.#maxHeadBytes = maxHeadBytes;
  }

  /** Whether no byte of the answer has come yet. */
  get untouched(): boolean {
    return this.#state === "head" && this.#held === undefined && !this.#interim;
  }

  get done(): boolean {
    return this.#state === "done";
  }

  /** Whether the connection may carry another request once this answer is done. */
  get reusable(): boolean {
    return this.#reusable;
  }

  /** The connection closed: true when that ends the answer (a body framed by the close). */
  closed(): boolean {
    if (this.#state !== "until-close") return this.#state === "done";
    this.#finish();
    return true;
  }

  /** Throws AnswerFramingError on bytes no HTTP/1.1 answer may hold, or bytes after the answer. */
  push(data: Uint8Array): void {
    let at = 0;
    while (at < data.length) {
      switch (this.#state) {
        case "head":
          at = this.#head(data, at);
          break;
        case "length":
        case "chunk-data":
          at = this.#bodyBytes(data, at);
          break;
        case "until-close":
          this.#sink.body(at === 0 ? data : data.subarray(at));
          at = data.length;
          break;
        case "done":
          throw new AnswerFramingError("bytes after the end of the answer");
        default:
          at = this.#lineOf(data, at);
      }
    }
  }

  #bodyBytes(data: Uint8Array, at: number): number {
    const take = Math.min(this.#remaining, data.length - at);
    this.#sink.body(at === 0 && take === data.length ? data : data.subarray(at, at + take));
    this.#remaining -= take;
    if (this.#remaining === 0) {
      if (this.#state === "length") this.#finish();
      else this.#state = "chunk-end";
    }
    return at + take;
  }

  #head(data: Uint8Array, start: number): number {
    const held = this.#held;
    const bytes = held === undefined ? data.subarray(start) : joined(held, data.subarray(start));
    const end = blankLineAt(bytes, held === undefined ? 0 : Math.max(0, held.length - 3));
    if (end < 0) {
      if (bytes.length > this.#maxHeadBytes) throw new AnswerFramingError(`answer head larger than ${this.#maxHeadBytes} bytes`);
      this.#held = bytes.slice();
      return data.length;
    }
    if (end > this.#maxHeadBytes) throw new AnswerFramingError(`answer head larger than ${this.#maxHeadBytes} bytes`);
    this.#held = undefined;
    const consumed = start + end + 4 - (held?.length ?? 0);
    const lines = latin1.decode(bytes.subarray(0, end)).split("\r\n");
    const status = statusOf(lines[0] ?? "");
    // Interim answers (100 Continue, 103 Early Hints) precede the real one; 101 would switch protocols.
    if (status.code >= 100 && status.code < 200) {
      if (status.code === 101) throw new AnswerFramingError("the worker switched protocols");
      this.#interim = true;
      return consumed;
    }
    this.#begin(status, lines);
    return consumed;
  }

  #begin(status: Status, lines: readonly string[]): void {
    const headers = new Headers();
    let length: string | undefined;
    let chunked = false;
    let encoded = false;
    for (let n = 1; n < lines.length; n++) {
      const line = lines[n] ?? "";
      const colon = line.indexOf(":");
      if (colon <= 0 || line.charCodeAt(0) === 0x20 || line.charCodeAt(0) === 0x09) throw new AnswerFramingError("malformed header line");
      const name = line.slice(0, colon).toLowerCase();
      if (name.charCodeAt(name.length - 1) === 0x20) throw new AnswerFramingError("whitespace before a header's colon");
      const value = line.slice(colon + 1).trim();
      headers.append(name, value);
      if (name === "content-length") {
        if (length !== undefined && length !== value) throw new AnswerFramingError("conflicting Content-Length headers");
        length = value;
      } else if (name === "transfer-encoding") {
        encoded = true;
        chunked = /(^|,)\s*chunked\s*$/i.test(value);
      } else if (name === "connection" && /(^|,)\s*close\s*(,|$)/i.test(value)) this.#reusable = false;
    }
    // Two framings at once is how a response is smuggled past one reader and not another (RFC 9112 §6.3):
    // refused, as llhttp refuses it, rather than trusting either length.
    if (encoded && (length !== undefined || status.legacy))
      throw new AnswerFramingError("Transfer-Encoding with Content-Length or on HTTP/1.0");
    // HTTP/1.0 closes after each answer unless it says otherwise: a connection it may close is never reused.
    if (status.legacy) this.#reusable = false;
    if (length !== undefined && !/^\d{1,15}$/.test(length)) throw new AnswerFramingError("malformed Content-Length");
    const bodiless = status.code === 204 || status.code === 304;
    // Read from the framing, not the header (two alike join as "2, 2" in Headers), and none where no body follows.
    const framed = bodiless || chunked || length === undefined ? undefined : Number(length);
    this.#sink.head({ status: status.code, statusText: status.text, headers, length: framed });
    if (bodiless) this.#finish();
    else if (chunked) this.#state = "chunk-size";
    else if (framed !== undefined) {
      this.#remaining = framed;
      this.#state = "length";
      if (framed === 0) this.#finish();
    } else {
      this.#state = "until-close";
      this.#reusable = false;
    }
  }

  /** A chunk-size line, the CRLF after a chunk's data, or a trailer line. */
  #lineOf(data: Uint8Array, start: number): number {
    // A stream's every event is a chunk: its CRLF and its size line read from the bytes, with no
    // text made (decoding them cost a relayed token more than the rest of its parse).
    if (this.#line === "") {
      if (this.#state === "chunk-end" && data[start] === CR && data[start + 1] === LF) {
        this.#state = "chunk-size";
        return start + 2;
      }
      if (this.#state === "chunk-size") {
        const end = hexSizeLine(data, start);
        if (end > 0) {
          this.#sizeOf(data, start, end - 2);
          return end;
        }
      }
    }
    const lf = data.indexOf(LF, start);
    const piece = latin1.decode(data.subarray(start, lf < 0 ? data.length : lf));
    if (this.#line.length + piece.length > MAX_LINE_BYTES) throw new AnswerFramingError("chunk line too long");
    if (lf < 0) {
      this.#line += piece;
      return data.length;
    }
    const whole = this.#line + piece;
    this.#line = "";
    const line = whole.endsWith("\r") ? whole.slice(0, -1) : whole;
    if (this.#state === "chunk-end") {
      if (line !== "") throw new AnswerFramingError("chunk data longer than its size");
      this.#state = "chunk-size";
    } else if (this.#state === "trailers") {
      if (line === "") this.#finish();
    } else this.#chunkSize(line);
    return lf + 1;
  }

  /** The size from a line of 1 to 12 hex digits (checked by hexSizeLine). */
  #sizeOf(data: Uint8Array, start: number, end: number): void {
    let size = 0;
    for (let i = start; i < end; i++) size = size * 16 + HEX[data[i]!]!;
    if (size === 0) this.#state = "trailers";
    else {
      this.#state = "chunk-data";
      this.#remaining = size;
    }
  }

  #chunkSize(line: string): void {
    const semicolon = line.indexOf(";");
    const hex = (semicolon < 0 ? line : line.slice(0, semicolon)).trim();
    if (!/^[0-9a-fA-F]{1,12}$/.test(hex)) throw new AnswerFramingError("malformed chunk size");
    const size = Number.parseInt(hex, 16);
    if (size === 0) this.#state = "trailers";
    else {
      this.#state = "chunk-data";
      this.#remaining = size;
    }
  }

  #finish(): void {
    this.#state = "done";
    this.#sink.end();
  }
}

/** A hex digit's value, or 255 for any other byte. */
const HEX = new Uint8Array(256).fill(255);
for (let c = 0; c < 16; c++) {
  HEX["0123456789abcdef".charCodeAt(c)] = c;
  HEX["0123456789ABCDEF".charCodeAt(c)] = c;
}

/**
 * Just after a line of 1 to 12 hex digits and its CRLF starting at `start`, all within `data`;
 * 0 for anything else (an extension, spaces, a line cut by the piece's end), which the general
 * path reads.
 */
function hexSizeLine(data: Uint8Array, start: number): number {
  let i = start;
  while (i < data.length && i - start < 12 && HEX[data[i]!] !== 255) i++;
  if (i === start || data[i] !== CR || data[i + 1] !== LF) return 0;
  return i + 2;
}

interface Status {
  readonly code: number;
  readonly text: string;
  /** An HTTP/1.0 answer. */
  readonly legacy: boolean;
}

function statusOf(line: string): Status {
  // Every valid status is from 100 to 599 (RFC 9110 §15); a Response cannot even hold one past it.
  const match = /^HTTP\/1\.([01]) ([1-5]\d\d)(?: (.*))?$/.exec(line);
  if (match === null) throw new AnswerFramingError("malformed status line");
  return { code: Number(match[2]), text: match[3] ?? "", legacy: match[1] === "0" };
}

/** Where the head's blank line (CRLF CRLF) starts, searching from `from`; -1 when not yet there. */
function blankLineAt(bytes: Uint8Array, from: number): number {
  for (let i = bytes.indexOf(CR, from); i >= 0 && i + 3 < bytes.length; i = bytes.indexOf(CR, i + 1)) {
    if (bytes[i + 1] === LF && bytes[i + 2] === CR && bytes[i + 3] === LF) return i;
  }
  return -1;
}

function joined(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
