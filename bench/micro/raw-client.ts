/**
 * Prototype of a worker client on `Bun.connect` (issue #29), measured against `fetch` by
 * bench/micro/worker-client.ts. Per-origin pools of keep-alive connections with their own idle
 * expiry and size, no global cap; the request's head and body written as bytes; the answer
 * parsed incrementally (status line, headers, Content-Length or chunked body), its body bytes
 * handed to a sink as they arrive. Bounds: head size, answer size, abort signal. Plain TCP
 * only (the prototype's question is CPU; TLS would be `Bun.connect({ tls })`).
 */

import type { Socket } from "bun";

export interface AnswerSink {
  head(status: number, headers: Headers): void;
  /** Body bytes, de-chunked; the view is lent for the call only. */
  body(bytes: Uint8Array): void;
  end(): void;
  fail(error: Error): void;
}

export interface RawClientOptions {
  /** Idle connections are closed after this long (below the workers' keep-alive). */
  readonly idleMs: number;
  /** Idle connections kept per origin. */
  readonly maxIdle: number;
  readonly maxHeadBytes?: number;
}

const CR = 0x0d;
const LF = 0x0a;
const latin1 = new TextDecoder("latin1");
const encoder = new TextEncoder();

type State = "head" | "length" | "chunk-size" | "chunk-data" | "chunk-crlf" | "trailers" | "until-close" | "done";

/** One HTTP/1.1 answer, parsed as its bytes come. */
class AnswerParser {
  state: State = "head";
  #held: Uint8Array | undefined;
  #remaining = 0;
  #line = "";
  keepAlive = true;
  readonly #sink: AnswerSink;
  readonly #maxHead: number;

  constructor(sink: AnswerSink, maxHead: number) {
    this.#sink = sink;
    this.#maxHead = maxHead;
  }

  push(data: Uint8Array): void {
    let i = 0;
    while (i < data.length) {
      switch (this.state) {
        case "head":
          i = this.#head(data, i);
          break;
        case "length":
        case "chunk-data": {
          const take = Math.min(this.#remaining, data.length - i);
          if (take > 0) this.#sink.body(data.subarray(i, i + take));
          this.#remaining -= take;
          i += take;
          if (this.#remaining === 0) {
            if (this.state === "length") this.#finish();
            else this.state = "chunk-crlf";
          }
          break;
        }
        case "until-close":
          this.#sink.body(data.subarray(i));
          i = data.length;
          break;
        case "done":
          throw new Error("bytes after the answer");
        default:
          i = this.#lineOf(data, i);
      }
    }
  }

  #head(data: Uint8Array, start: number): number {
    const held = this.#held;
    const bytes = held === undefined ? data.subarray(start) : join(held, data.subarray(start));
    const at = blankLine(bytes, held === undefined ? 0 : Math.max(0, held.length - 3));
    if (at < 0) {
      if (bytes.length > this.#maxHead) throw new Error("answer head too large");
      this.#held = bytes.slice();
      return data.length;
    }
    this.#held = undefined;
    const lines = latin1.decode(bytes.subarray(0, at)).split("\r\n");
    const status = Number(lines[0]?.slice(9, 12));
    const headers = new Headers();
    let length = -1;
    let chunked = false;
    for (let n = 1; n < lines.length; n++) {
      const line = lines[n] ?? "";
      const colon = line.indexOf(":");
      const name = line.slice(0, colon).trim().toLowerCase();
      const value = line.slice(colon + 1).trim();
      headers.append(name, value);
      if (name === "content-length") length = Number(value);
      else if (name === "transfer-encoding") chunked = value.toLowerCase().includes("chunked");
      else if (name === "connection") this.keepAlive = value.toLowerCase() !== "close";
    }
    this.#sink.head(status, headers);
    if (chunked) this.state = "chunk-size";
    else if (length >= 0) {
      this.state = "length";
      this.#remaining = length;
      if (length === 0) this.#finish();
    } else if (status === 204 || status === 304) this.#finish();
    else {
      this.state = "until-close";
      this.keepAlive = false;
    }
    return start + at + 4 - (held?.length ?? 0);
  }

  #lineOf(data: Uint8Array, start: number): number {
    const lf = data.indexOf(LF, start);
    if (lf < 0) {
      this.#line += latin1.decode(data.subarray(start));
      if (this.#line.length > 1024) throw new Error("chunk line too long");
      return data.length;
    }
    const end = lf > start && data[lf - 1] === CR ? lf - 1 : lf;
    const line = this.#line + latin1.decode(data.subarray(start, end));
    this.#line = "";
    if (this.state === "chunk-crlf") this.state = "chunk-size";
    else if (this.state === "trailers") {
      if (line === "" || line === "\r") this.#finish();
    } else {
      const size = Number.parseInt(line, 16);
      if (Number.isNaN(size)) throw new Error("bad chunk size");
      if (size === 0) this.state = "trailers";
      else {
        this.state = "chunk-data";
        this.#remaining = size;
      }
    }
    return lf + 1;
  }

  #finish(): void {
    this.state = "done";
    this.#sink.end();
  }
}

interface Slot {
  conn: Connection | undefined;
}

class Connection {
  readonly socket: Socket<Slot>;
  readonly pool: OriginPool;
  parser: AnswerParser | undefined;
  sink: AnswerSink | undefined;
  idleSince = 0;
  closed = false;
  #unsent: Uint8Array | undefined;

  constructor(socket: Socket<Slot>, pool: OriginPool) {
    this.socket = socket;
    this.pool = pool;
  }

  send(head: Uint8Array, body: Uint8Array | undefined, sink: AnswerSink, maxHead: number): void {
    this.sink = sink;
    // The connection goes back to its pool before the sink hears of the end, so the caller's
    // next request on this origin may reuse it.
    this.parser = new AnswerParser(
      {
        head: (status, headers) => sink.head(status, headers),
        body: (bytes) => sink.body(bytes),
        fail: (error) => sink.fail(error),
        end: () => this.#done(sink),
      },
      maxHead,
    );
    if (body === undefined || body.length === 0) this.#write(head);
    else {
      // One write when small: corked by the kernel as one segment.
      this.#write(join(head, body));
    }
  }

  #write(bytes: Uint8Array): void {
    const written = this.socket.write(bytes);
    if (written < bytes.length) this.#unsent = bytes.subarray(Math.max(0, written));
  }

  onDrain(): void {
    const unsent = this.#unsent;
    this.#unsent = undefined;
    if (unsent !== undefined) this.#write(unsent);
  }

  onData(bytes: Uint8Array): void {
    const parser = this.parser;
    if (parser === undefined) {
      this.destroy();
      return;
    }
    try {
      parser.push(bytes);
    } catch (error) {
      this.fail(error instanceof Error ? error : new Error(String(error)));
      this.destroy();
      return;
    }
  }

  #done(sink: AnswerSink): void {
    const parser = this.parser;
    this.parser = undefined;
    this.sink = undefined;
    if (parser?.keepAlive === true) this.pool.release(this);
    else this.destroy();
    sink.end();
  }

  onClose(error: Error): void {
    if (this.closed) return;
    this.closed = true;
    this.pool.forget(this);
    const parser = this.parser;
    if (parser?.state === "until-close") this.sink?.end();
    else if (parser !== undefined) this.fail(error);
  }

  fail(error: Error): void {
    const sink = this.sink;
    this.sink = undefined;
    this.parser = undefined;
    sink?.fail(error);
  }

  destroy(): void {
    if (!this.closed) {
      this.closed = true;
      this.pool.forget(this);
      this.socket.terminate();
    }
  }
}

class OriginPool {
  readonly #host: string;
  readonly #port: number;
  readonly #options: RawClientOptions;
  readonly #idle: Connection[] = [];
  #sweeper: Timer | undefined;

  constructor(host: string, port: number, options: RawClientOptions) {
    this.#host = host;
    this.#port = port;
    this.#options = options;
  }

  acquire(): Connection | Promise<Connection> {
    const conn = this.#idle.pop();
    if (conn !== undefined && !conn.closed) return conn;
    return this.#open();
  }

  async #open(): Promise<Connection> {
    const slot: Slot = { conn: undefined };
    const socket = await Bun.connect<Slot>({
      hostname: this.#host,
      port: this.#port,
      data: slot,
      socket: {
        data: (s, bytes) => s.data.conn?.onData(bytes),
        drain: (s) => s.data.conn?.onDrain(),
        close: (s) => s.data.conn?.onClose(new Error("connection closed")),
        error: (s, error) => s.data.conn?.onClose(error),
      },
    });
    socket.setNoDelay(true);
    const conn = new Connection(socket, this);
    slot.conn = conn;
    return conn;
  }

  release(conn: Connection): void {
    if (this.#idle.length >= this.#options.maxIdle) {
      conn.destroy();
      return;
    }
    conn.idleSince = performance.now();
    this.#idle.push(conn);
    this.#sweeper ??= setInterval(() => this.#sweep(), Math.max(100, this.#options.idleMs / 2));
    this.#sweeper.unref();
  }

  forget(conn: Connection): void {
    const at = this.#idle.indexOf(conn);
    if (at >= 0) this.#idle.splice(at, 1);
  }

  #sweep(): void {
    const oldest = performance.now() - this.#options.idleMs;
    while (this.#idle.length > 0 && (this.#idle[0]?.idleSince ?? 0) < oldest) this.#idle.shift()?.destroy();
    if (this.#idle.length === 0 && this.#sweeper !== undefined) {
      clearInterval(this.#sweeper);
      this.#sweeper = undefined;
    }
  }

  close(): void {
    for (const conn of this.#idle.splice(0)) conn.destroy();
  }
}

export interface RawRequest {
  readonly method: "GET" | "POST";
  readonly path: string;
  readonly headers: Readonly<Record<string, string>>;
  readonly body?: Uint8Array | string;
  readonly signal?: AbortSignal;
}

/** The client: one pool per origin, created on first use. */
export class RawClient {
  readonly #pools = new Map<string, OriginPool>();
  readonly #options: RawClientOptions;

  constructor(options: RawClientOptions) {
    this.#options = options;
  }

  /** Sends one request; `sink` hears about its answer. */
  request(origin: string, request: RawRequest, sink: AnswerSink): void {
    const pool = this.#pool(origin);
    const body = typeof request.body === "string" ? encoder.encode(request.body) : request.body;
    let head = `${request.method} ${request.path} HTTP/1.1\r\nhost: ${origin.slice(7)}\r\n`;
    for (const name in request.headers) head += `${name}: ${request.headers[name]}\r\n`;
    if (body !== undefined) head += `content-length: ${body.length}\r\n`;
    head += "\r\n";
    const headBytes = encoder.encode(head);
    const got = pool.acquire();
    const go = (conn: Connection): void => {
      const signal = request.signal;
      if (signal !== undefined) {
        if (signal.aborted) {
          pool.release(conn);
          sink.fail(new Error("aborted"));
          return;
        }
        const onAbort = (): void => {
          conn.fail(new Error("aborted"));
          conn.destroy();
        };
        signal.addEventListener("abort", onAbort, { once: true });
        const inner = sink;
        sink = {
          head: (status, headers) => inner.head(status, headers),
          body: (bytes) => inner.body(bytes),
          end: () => {
            signal.removeEventListener("abort", onAbort);
            inner.end();
          },
          fail: (error) => {
            signal.removeEventListener("abort", onAbort);
            inner.fail(error);
          },
        };
      }
      conn.send(headBytes, body, sink, this.#options.maxHeadBytes ?? 64 * 1024);
    };
    if (got instanceof Promise) got.then(go, (error: unknown) => sink.fail(error instanceof Error ? error : new Error(String(error))));
    else go(got);
  }

  /** A whole answer: status, headers and body bytes (refused above `limit`). */
  bytes(origin: string, request: RawRequest, limit: number): Promise<{ status: number; headers: Headers; body: Uint8Array }> {
    return new Promise((resolve, reject) => {
      let status = 0;
      let headers: Headers | undefined;
      const parts: Uint8Array[] = [];
      let size = 0;
      this.request(origin, request, {
        head(s, h) {
          status = s;
          headers = h;
        },
        body(bytes) {
          size += bytes.length;
          if (size > limit) throw new Error("answer too large");
          parts.push(bytes.slice());
        },
        end() {
          resolve({
            status,
            headers: headers ?? new Headers(),
            body: parts.length === 1 ? (parts[0] as Uint8Array) : joinAll(parts, size),
          });
        },
        fail: reject,
      });
    });
  }

  /** A streamed answer as a Response, its body fed by the socket (what the relay reads). */
  stream(origin: string, request: RawRequest): Promise<Response> {
    return new Promise((resolve, reject) => {
      let controller: ReadableStreamDefaultController<Uint8Array> | undefined;
      const body = new ReadableStream<Uint8Array>({
        start(c) {
          controller = c;
        },
      });
      this.request(origin, request, {
        head(status, headers) {
          resolve(new Response(body, { status, headers }));
        },
        body(bytes) {
          controller?.enqueue(bytes.slice());
        },
        end() {
          controller?.close();
        },
        fail(error) {
          reject(error);
          try {
            controller?.error(error);
          } catch {
            // already closed
          }
        },
      });
    });
  }

  close(): void {
    for (const pool of this.#pools.values()) pool.close();
  }

  #pool(origin: string): OriginPool {
    let pool = this.#pools.get(origin);
    if (pool === undefined) {
      const url = new URL(origin);
      pool = new OriginPool(url.hostname, Number(url.port), this.#options);
      this.#pools.set(origin, pool);
    }
    return pool;
  }
}

function blankLine(bytes: Uint8Array, from: number): number {
  for (let i = bytes.indexOf(CR, from); i >= 0 && i + 3 < bytes.length; i = bytes.indexOf(CR, i + 1)) {
    if (bytes[i + 1] === LF && bytes[i + 2] === CR && bytes[i + 3] === LF) return i;
  }
  return -1;
}

function join(a: Uint8Array, b: Uint8Array): Uint8Array {
  const out = new Uint8Array(a.length + b.length);
  out.set(a);
  out.set(b, a.length);
  return out;
}

function joinAll(parts: readonly Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}
