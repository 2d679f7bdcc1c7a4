/**
 * Incremental HTTP/1.1 response parser for the load generator: status line, the three headers
 * a keep-alive client needs (content-length, transfer-encoding, connection), and the body with
 * chunked framing removed. Bytes past the end of a response belong to nobody (one request in
 * flight per connection), so they are reported as an error.
 */

export interface ResponseEvents {
  /** The status line and headers are complete. */
  head(status: number): void;
  /** Body bytes (de-chunked); the view is valid only during the call. */
  body(bytes: Uint8Array): void;
  /** The response is complete; `reusable` false when the server asked to close. */
  end(reusable: boolean): void;
}

const CR = 0x0d;
const LF = 0x0a;
const MAX_HEAD_BYTES = 64 * 1024;
const decoder = new TextDecoder();
const EMPTY = new Uint8Array(0);

type State = "head" | "length" | "chunk-size" | "chunk-data" | "chunk-crlf" | "trailers" | "until-close" | "done";

export class ResponseParser {
  readonly #events: ResponseEvents;
  #state: State = "head";
  #line: number[] = [];
  #headBytes: Uint8Array = EMPTY;
  #remaining = 0;
  #close = false;

  constructor(events: ResponseEvents) {
    this.#events = events;
  }

  get done(): boolean {
    return this.#state === "done";
  }

  /** The connection closed: ends a read-until-close body; true when the response was complete. */
  closed(): boolean {
    if (this.#state === "until-close") this.#finish();
    return this.#state === "done";
  }

  push(data: Uint8Array): void {
    let i = 0;
    while (i < data.length) {
      if (this.#state === "done") throw new Error(`Unexpected ${data.length - i} bytes after the response`);
      i = this.#step(data, i);
    }
  }

  /** Consumes from `i` in the current state; returns the next unread index. */
  #step(data: Uint8Array, i: number): number {
    switch (this.#state) {
      case "head":
        return this.#readHead(data, i);
      case "length":
      case "chunk-data":
        return this.#readCounted(data, i);
      case "until-close":
        this.#events.body(data.subarray(i));
        return data.length;
      default:
        return this.#readLine(data, i);
    }
  }

  #readHead(data: Uint8Array, start: number): number {
    const held = this.#headBytes.length;
    const joined = held === 0 ? data.subarray(start) : concat(this.#headBytes, data.subarray(start));
    const at = indexOfBlankLine(joined, Math.max(0, held - 3));
    if (at < 0) {
      if (joined.length > MAX_HEAD_BYTES) throw new Error("Response head too large");
      this.#headBytes = joined.slice(); // the caller's buffer is only lent for this call
      return data.length;
    }
    this.#headBytes = EMPTY;
    this.#startBody(decoder.decode(joined.subarray(0, at)));
    return start + at + 4 - held;
  }

  #startBody(head: string): void {
    const lines = head.split("\r\n");
    const status = Number((lines[0] ?? "").split(" ")[1]);
    let length: number | undefined;
    let chunked = false;
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(":");
      const name = line.slice(0, colon).toLowerCase();
      const value = line
        .slice(colon + 1)
        .trim()
        .toLowerCase();
      if (name === "content-length") length = Number(value);
      else if (name === "transfer-encoding") chunked = value.includes("chunked");
      else if (name === "connection") this.#close = value === "close";
    }
    this.#events.head(status);
    if (chunked) this.#state = "chunk-size";
    else if (length !== undefined) this.#startCounted(length, "length");
    else if (status === 204 || status === 304) this.#finish();
    else this.#state = "until-close";
  }

  #startCounted(length: number, state: "length" | "chunk-data"): void {
    this.#remaining = length;
    this.#state = state;
    if (length === 0) this.#afterCounted();
  }

  #readCounted(data: Uint8Array, i: number): number {
    const take = Math.min(this.#remaining, data.length - i);
    if (take > 0) this.#events.body(data.subarray(i, i + take));
    this.#remaining -= take;
    if (this.#remaining === 0) this.#afterCounted();
    return i + take;
  }

  #afterCounted(): void {
    if (this.#state === "length") this.#finish();
    else this.#state = "chunk-crlf";
  }

  /** Chunk sizes, the CRLF after chunk data, and trailers: line-oriented parts of chunked framing. */
  #readLine(data: Uint8Array, start: number): number {
    for (let i = start; i < data.length; i++) {
      const byte = data[i] ?? 0;
      if (byte !== LF) {
        if (byte !== CR) this.#line.push(byte);
        continue;
      }
      const line = decoder.decode(Uint8Array.from(this.#line));
      this.#line = [];
      this.#lineEnded(line);
      return i + 1;
    }
    return data.length;
  }

  #lineEnded(line: string): void {
    if (this.#state === "chunk-crlf") {
      this.#state = "chunk-size";
      return;
    }
    if (this.#state === "trailers") {
      if (line === "") this.#finish();
      return;
    }
    const size = Number.parseInt(line.split(";")[0] ?? "", 16);
    if (Number.isNaN(size)) throw new Error(`Bad chunk size line "${line}"`);
    if (size === 0) this.#state = "trailers";
    else this.#startCounted(size, "chunk-data");
  }

  #finish(): void {
    this.#state = "done";
    this.#events.end(!this.#close);
  }
}

/** Index of the CRLF CRLF ending a head, searching from `from`; -1 when absent. */
function indexOfBlankLine(bytes: Uint8Array, from: number): number {
  for (let i = bytes.indexOf(CR, from); i >= 0 && i + 3 < bytes.length; i = bytes.indexOf(CR, i + 1)) {
    if (bytes[i + 1] === LF && bytes[i + 2] === CR && bytes[i + 3] === LF) return i;
  }
  return -1;
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}
