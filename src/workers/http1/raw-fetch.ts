import { abortReason, type CallTimeout } from "./exchange.ts";
import type { RawBody, RawInit } from "./connection.ts";
import { ResponseExchange } from "./response-exchange.ts";
import { StreamExchange, type StreamAnswer } from "./stream-exchange.ts";
import { WholeExchange, type WholeAnswer, type WholeOptions } from "./whole-exchange.ts";
import { OriginPool } from "./origin-pool.ts";

/**
 * fetch for plain-HTTP workers on `Bun.connect` sockets (issue #37): the request written as
 * bytes on a pooled connection, the answer parsed as it arrives (answer-parser.ts) and handed
 * back as a `Response` at its head, its body fed by the socket with backpressure. fetch's own
 * per-call work was a fifth of the proxy's CPU per request, and its per-stream state 5–7 KiB of
 * an open stream's memory (bench/RESULTS.md, issues #29 and #37). Only `http:` URLs; the
 * transport (transport.ts) keeps fetch for https: workers.
 */
export interface RawFetchOptions {
  /** A connection idle this long is never reused (--worker-keep-alive-s). */
  readonly keepAliveMs: number;
  /** An answer's status line and headers larger than this fail the call. @default 64 KiB */
  readonly maxHeadBytes?: number;
}

export interface RawFetch {
  /** fetch's contract: a Response at the answer's head. */
  readonly fetch: (url: string, init?: BunFetchRequestInit) => Promise<Response>;
  /** A whole answer within its bound, with no Response (whole-exchange.ts). */
  readonly whole: (url: string, init: RawInit, options: WholeOptions) => Promise<WholeAnswer>;
  /** A streamed answer at its head, its body read straight from the socket (stream-exchange.ts). */
  readonly stream: (url: string, init: RawInit, timeout: CallTimeout | undefined) => Promise<StreamAnswer>;
}

/** Origins with a pool of their own; beyond, the least recently used one is closed (workers come and go). */
const MAX_POOLS = 1024;
const DEFAULT_MAX_HEAD_BYTES = 64 * 1024;
/** A header name or value that could end the line it is written on, holds a NUL, or is no ByteString (fetch refuses these too). */
const UNSAFE_HEADER = /[\r\n\0\u0100-\uffff]/;

export function createRawFetch(options: RawFetchOptions): RawFetch {
  const pools = new Map<string, OriginPool>();
  const poolOf = (origin: string): OriginPool => {
    const pool = pools.get(origin);
    if (pool !== undefined) {
      // Kept in use order: the first entry is the least recently used.
      pools.delete(origin);
      pools.set(origin, pool);
      return pool;
    }
    if (pools.size >= MAX_POOLS) {
      const [oldest, dropped] = pools.entries().next().value ?? [];
      if (oldest !== undefined) pools.delete(oldest);
      dropped?.close();
    }
    const { hostname, port } = addressOf(origin);
    const created = new OriginPool(hostname, port, options.keepAliveMs, options.maxHeadBytes ?? DEFAULT_MAX_HEAD_BYTES);
    pools.set(origin, created);
    return created;
  };
  /**
   * The request as bytes and its pool. It throws (a bad header, a body of another kind) before its
   * exchange exists: a call refused so leaves no deadline or abort listener behind.
   */
  const prepare = (url: string, init: RawInit): Prepared => {
    const { origin, path } = splitUrl(url);
    const fresh = init.keepalive === false;
    const body = bodyOf(init.body);
    const head = headOf(init.method ?? "GET", path, origin, init.headers, body, fresh);
    return { pool: poolOf(origin), head, body, fresh };
  };
  /** One call: the request prepared, its exchange made and started, what the caller waits for. */
  const run = <E extends ResponseExchange | WholeExchange | StreamExchange, T>(
    url: string,
    init: RawInit,
    make: (signal: AbortSignal | undefined) => E,
    result: (exchange: E) => Promise<T>,
  ): Promise<T> =>
    call(init, () => {
      const request = prepare(url, init);
      const exchange = make(init.signal ?? undefined);
      start(request, exchange);
      return result(exchange);
    });
  return {
    fetch: (url, init = {}) =>
      run(
        url,
        init,
        (signal) => new ResponseExchange(signal),
        (exchange) => exchange.response,
      ),
    whole: (url, init, wholeOptions) =>
      run(
        url,
        init,
        (signal) => new WholeExchange(signal, wholeOptions),
        (exchange) => exchange.answer,
      ),
    stream: (url, init, timeout) =>
      run(
        url,
        init,
        (signal) => new StreamExchange(signal, timeout),
        (exchange) => exchange.answer,
      ),
  };
}

/** Starts `exchange` on a pooled connection, or a new one (always new for `keepalive: false`). */
function start({ pool, head, body, fresh }: Prepared, exchange: ResponseExchange | WholeExchange | StreamExchange): void {
  const reused = fresh ? undefined : pool.reusable();
  if (reused !== undefined) exchange.start(reused, head, body);
  else {
    pool
      .open(() => exchange.ended, fresh)
      .then(
        (connection) => exchange.start(connection, head, body),
        (error: unknown) => exchange.fail(error instanceof Error ? error : new Error(String(error))),
      );
  }
}

interface Prepared {
  readonly pool: OriginPool;
  readonly head: string;
  readonly body: RawBody;
  readonly fresh: boolean;
}

/** A call refused before anything was sent (a bad header, an aborted signal) is a rejection, as fetch's. */
function call<T>(init: RawInit, begin: () => Promise<T>): Promise<T> {
  try {
    if (init.signal?.aborted === true) return Promise.reject(abortReason(init.signal));
    return begin();
  } catch (error) {
    return Promise.reject(error instanceof Error ? error : new Error(String(error)));
  }
}

function bodyOf(body: RawInit["body"]): RawBody {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string" || body instanceof Uint8Array || body instanceof ReadableStream) return body;
  if (Array.isArray(body) && body.every((part) => part instanceof Uint8Array)) return body;
  throw new TypeError("The worker transport sends string, byte or stream bodies only");
}

/** The request's head: its line, Host, the caller's headers, and the body's length. */
function headOf(
  method: string,
  path: string,
  origin: string,
  given: BunFetchRequestInit["headers"],
  body: RawBody,
  fresh: boolean,
): string {
  let head = `${method} ${path} HTTP/1.1\r\nhost: ${origin.slice(origin.indexOf("//") + 2)}\r\n`;
  let length: string | undefined;
  const add = (name: string, value: string): void => {
    if (isContentLength(name, value)) length = value;
    else head += `${name}: ${value}\r\n`;
  };
  if (given instanceof Headers) given.forEach((value, name) => add(name, value));
  else if (Array.isArray(given)) for (const [name, value] of given) add(name ?? "", value ?? "");
  else if (given !== undefined) {
    // A plain record (every worker call's): no closure call or entry arrays per header.
    for (const name in given) {
      const values = given[name];
      const value = typeof values === "string" ? values : (values ?? []).join(", ");
      if (isContentLength(name, value)) length = value;
      else head += `${name}: ${value}\r\n`;
    }
  }
  if (body instanceof ReadableStream) {
    if (length === undefined) throw new TypeError("A stream body needs its Content-Length");
    head += `content-length: ${length}\r\n`;
  } else if (body !== undefined) head += `content-length: ${lengthOf(body)}\r\n`;
  if (fresh) head += "connection: close\r\n";
  return `${head}\r\n`;
}

/** Whether the header is the caller's Content-Length (written by the transport itself); throws on one that could break the head. */
function isContentLength(name: string, value: string): boolean {
  if (UNSAFE_HEADER.test(value) || UNSAFE_HEADER.test(name)) throw new TypeError(`Header ${name} holds a line break or NUL`);
  return name.length === 14 && name.toLowerCase() === "content-length";
}

function lengthOf(body: string | Uint8Array | readonly Uint8Array[]): number {
  if (typeof body === "string") return Buffer.byteLength(body);
  if (body instanceof Uint8Array) return body.byteLength;
  let length = 0;
  for (const part of body) length += part.byteLength;
  return length;
}

/** `http://host:port` and `/path?query` of a worker URL, split without parsing it whole (this runs on every call). */
function splitUrl(url: string): { origin: string; path: string } {
  const slash = url.indexOf("/", url.indexOf("://") + 3);
  return slash < 0 ? { origin: url, path: "/" } : { origin: url.slice(0, slash), path: url.slice(slash) };
}

function addressOf(origin: string): { hostname: string; port: number } {
  const url = new URL(origin);
  if (url.protocol !== "http:") throw new TypeError(`The raw worker transport speaks http: only, not ${url.protocol}`);
  // An IPv6 literal keeps its brackets in a URL, not in a socket address.
  const hostname = url.hostname.startsWith("[") ? url.hostname.slice(1, -1) : url.hostname;
  return { hostname, port: url.port === "" ? 80 : Number(url.port) };
}
