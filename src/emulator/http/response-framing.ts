/**
 * Where HTTP/1.1 responses end in a byte stream a server writes (RFC 9112 §6): a head, then a
 * body framed by Content-Length, by chunked transfer coding, or by the connection's close.
 * The connection front (connection-faults.ts) feeds it the worker's bytes to know when a
 * connection falls idle, as uvicorn knows it when its response cycle completes.
 */

/** A head longer than this is not HTTP the emulator wrote: framing stops (the connection closes at its end). */
const MAX_HEAD_BYTES = 64 * 1024;

const CR = 13;
const LF = 10;

type State =
  | { readonly kind: "head" }
  | { readonly kind: "length"; remaining: number }
  | { readonly kind: "chunk-size" }
  | { readonly kind: "chunk-data"; remaining: number }
  | { readonly kind: "chunk-end"; remaining: number }
  | { readonly kind: "trailer" }
  | { readonly kind: "until-close" };

export class ResponseFraming {
  #state: State = { kind: "head" };
  /** The current line (head, chunk size, trailer), bounded. */
  #line: number[] = [];
  #head: string[] = [];
  #headBytes = 0;

  /** Feeds the next bytes; returns how many responses ended within them. */
  feed(bytes: Uint8Array): number {
    let ended = 0;
    let at = 0;
    while (at < bytes.length) {
      const state = this.#state;
      switch (state.kind) {
        case "length":
        case "chunk-data":
        case "chunk-end": {
          const take = Math.min(state.remaining, bytes.length - at);
          state.remaining -= take;
          at += take;
          if (state.remaining > 0) break;
          if (state.kind === "length") {
            ended++;
            this.#state = { kind: "head" };
          } else this.#state = state.kind === "chunk-data" ? { kind: "chunk-end", remaining: 2 } : { kind: "chunk-size" };
          break;
        }
        case "until-close":
          return ended;
        default: {
          const line = this.#takeLine(bytes, at);
          at = line.next;
          if (line.text === undefined) break;
          if (this.#onLine(state.kind, line.text)) ended++;
        }
      }
    }
    return ended;
  }

  /** Reads up to the end of a line (CRLF or LF); text undefined while the line is incomplete. */
  #takeLine(bytes: Uint8Array, from: number): { text: string | undefined; next: number } {
    for (let at = from; at < bytes.length; at++) {
      const byte = bytes[at]!;
      if (byte === LF) {
        const text = String.fromCharCode(...this.#line.filter((b) => b !== CR));
        this.#line = [];
        return { text, next: at + 1 };
      }
      this.#headBytes++;
      if (this.#headBytes > MAX_HEAD_BYTES) {
        this.#state = { kind: "until-close" };
        return { text: undefined, next: bytes.length };
      }
      this.#line.push(byte);
    }
    return { text: undefined, next: bytes.length };
  }

  /** One complete line in a line state; true when it ended a response. */
  #onLine(kind: "head" | "chunk-size" | "trailer", text: string): boolean {
    if (kind === "chunk-size") {
      this.#headBytes = 0;
      const size = Number.parseInt(text.split(";")[0]!.trim(), 16);
      this.#state = size > 0 ? { kind: "chunk-data", remaining: size } : { kind: "trailer" };
      return false;
    }
    if (kind === "trailer") {
      if (text !== "") return false;
      this.#state = { kind: "head" };
      this.#headBytes = 0;
      return true;
    }
    if (text !== "") {
      this.#head.push(text);
      return false;
    }
    return this.#headEnded();
  }

  #headEnded(): boolean {
    const [statusLine = "", ...fields] = this.#head;
    this.#head = [];
    this.#headBytes = 0;
    const status = Number(statusLine.split(" ")[1]);
    // An interim response (100 Continue) is followed by the real one.
    if (status >= 100 && status < 200) return false;
    const field = (name: string): string | undefined => fieldOf(fields, name);
    if (status === 204 || status === 304) return true;
    if ((field("transfer-encoding") ?? "").toLowerCase().includes("chunked")) {
      this.#state = { kind: "chunk-size" };
      return false;
    }
    const length = field("content-length");
    if (length === undefined) {
      this.#state = { kind: "until-close" };
      return false;
    }
    const remaining = Number(length);
    if (remaining === 0) return true;
    this.#state = { kind: "length", remaining };
    return false;
  }
}

function fieldOf(fields: readonly string[], name: string): string | undefined {
  for (const line of fields) {
    const colon = line.indexOf(":");
    if (colon > 0 && line.slice(0, colon).trim().toLowerCase() === name) return line.slice(colon + 1).trim();
  }
  return undefined;
}
