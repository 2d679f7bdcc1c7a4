import type { AnswerHead } from "./answer-parser.ts";
import type { Exchange, WorkerConnection } from "./connection.ts";
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

export type RawFetch = (url: string, init?: BunFetchRequestInit) => Promise<Response>;

/** Origins with a pool of their own; beyond, the least recently used one is closed (workers come and go). */
const MAX_POOLS = 1024;
const DEFAULT_MAX_HEAD_BYTES = 64 * 1024;
/** A header value that could end the line it is written on (fetch refuses these too). */
const UNSAFE_VALUE = /[\r\n\0]/;

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
  return (url, init = {}) => {
    try {
      return call(url, init);
    } catch (error) {
      // Refused before anything was sent (a header fetch would refuse too): a rejection, as fetch's.
      return Promise.reject(error instanceof Error ? error : new Error(String(error)));
    }
  };
  function call(url: string, init: BunFetchRequestInit): Promise<Response> {
    const { origin, path } = splitUrl(url);
    const signal = init.signal ?? undefined;
    if (signal?.aborted === true) return Promise.reject(abortReason(signal));
    const fresh = init.keepalive === false;
    const body = bodyOf(init.body);
    const head = headOf(init.method ?? "GET", path, origin, init.headers, body, fresh);
    const exchange = new RawExchange(signal);
    const pool = poolOf(origin);
    const reused = fresh ? undefined : pool.reusable();
    if (reused !== undefined) exchange.start(reused, head, body);
    else {
      pool.open().then(
        (connection) => exchange.start(connection, head, body),
        (error: unknown) => exchange.fail(error instanceof Error ? error : new Error(String(error))),
      );
    }
    return exchange.response;
  }
}

type RawBody = string | Uint8Array | ReadableStream<Uint8Array> | undefined;

function bodyOf(body: BunFetchRequestInit["body"]): RawBody {
  if (body === undefined || body === null) return undefined;
  if (typeof body === "string" || body instanceof Uint8Array || body instanceof ReadableStream) return body;
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
    if (UNSAFE_VALUE.test(value) || UNSAFE_VALUE.test(name)) throw new TypeError(`Header ${name} holds a line break or NUL`);
    if (name.toLowerCase() === "content-length") length = value;
    else head += `${name}: ${value}\r\n`;
  };
  if (given instanceof Headers) given.forEach((value, name) => add(name, value));
  else if (Array.isArray(given)) for (const [name, value] of given) add(name ?? "", value ?? "");
  else if (given !== undefined)
    for (const [name, value] of Object.entries(given)) add(name, typeof value === "string" ? value : value.join(", "));
  if (body instanceof ReadableStream) {
    if (length === undefined) throw new TypeError("A stream body needs its Content-Length");
    head += `content-length: ${length}\r\n`;
  } else if (body !== undefined) head += `content-length: ${typeof body === "string" ? Buffer.byteLength(body) : body.byteLength}\r\n`;
  if (fresh) head += "connection: close\r\n";
  return `${head}\r\n`;
}

/** One call: its Response once the head arrives, its body fed from the socket, the abort signal heard throughout. */
class RawExchange implements Exchange {
  readonly response: Promise<Response>;
  readonly #resolve: (response: Response) => void;
  readonly #reject: (error: Error) => void;
  readonly #signal: AbortSignal | undefined;
  #connection: WorkerConnection | undefined;
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  #headed = false;
  #over = false;

  constructor(signal: AbortSignal | undefined) {
    const { promise, resolve, reject } = Promise.withResolvers<Response>();
    this.response = promise;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#signal = signal;
    signal?.addEventListener("abort", this, { once: true });
  }

  start(connection: WorkerConnection, head: string, body: RawBody): void {
    if (this.#over) {
      connection.abandon();
      return;
    }
    this.#connection = connection;
    connection.send(head, body, this);
  }

  /** The signal's abort (the exchange is its listener object: no closure per call). */
  handleEvent(): void {
    if (this.#over) return;
    this.#connection?.abandon();
    this.#settle(abortReason(this.#signal));
  }

  head(head: AnswerHead): void {
    this.#headed = true;
    const nullBody = head.status === 204 || head.status === 304;
    const body = nullBody ? null : this.#bodyStream();
    this.#resolve(new Response(body, { status: head.status, statusText: head.statusText, headers: head.headers }));
  }

  body(bytes: Uint8Array): void {
    const controller = this.#controller;
    if (controller === undefined || this.#over) return;
    controller.enqueue(bytes);
    if ((controller.desiredSize ?? 1) <= 0) this.#connection?.pause();
  }

  end(): void {
    if (this.#over) return;
    this.#over = true;
    this.#signal?.removeEventListener("abort", this);
    try {
      this.#controller?.close();
    } catch {
      // The consumer cancelled the body: nothing to close.
    }
  }

  fail(error: Error): void {
    if (!this.#over) this.#settle(error);
  }

  #settle(error: Error): void {
    this.#over = true;
    this.#signal?.removeEventListener("abort", this);
    if (!this.#headed) {
      this.#reject(error);
      return;
    }
    try {
      this.#controller?.error(error);
    } catch {
      // Already closed or cancelled.
    }
  }

  #bodyStream(): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>(
      {
        start: (controller) => {
          this.#controller = controller;
        },
        pull: () => {
          this.#connection?.resume();
        },
        cancel: () => {
          if (this.#over) return;
          this.#over = true;
          this.#signal?.removeEventListener("abort", this);
          this.#connection?.abandon();
        },
      },
      // Pieces held before the socket pauses: a consumer a few pieces behind costs no pause.
      { highWaterMark: 16 },
    );
  }
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

/** What an aborted call fails with: the signal's reason, as fetch's. */
function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new DOMException("The operation was aborted", "AbortError");
}
