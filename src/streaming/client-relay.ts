import { asProxyError, clientGone, ProxyError } from "../errors.ts";
import type { RequestContext } from "../request/context.ts";
import type { DialectStream } from "./dialect.ts";
import { RUNTIME_CLOCK, type EarlyStreamRequest, type Ending, type StreamClock, type StreamTimings } from "./stream-request.ts";

type ReadResult = { done: true; value?: Uint8Array | undefined } | { done: false; value: Uint8Array };
/** The part of a stream reader the relay uses (the runtime's and Node's reader types differ). */
export interface Reader {
  read(): Promise<ReadResult>;
  cancel(reason?: unknown): Promise<void>;
}

/** The worker's stream and its first read, or why that read failed. */
export type FirstRead = { readonly reader: Reader; readonly read: ReadResult } | { readonly reader: Reader; readonly failure: unknown };

/** The runtime's own reader: a wrapper would cost a promise and an object per chunk. */
export function readerOf(body: ReadableStream<Uint8Array>): Reader {
  return body.getReader();
}

/**
 * The client's body: a pull-based stream over the worker's, with one timer for keepalive and
 * silence. It closes once (`ended`), and the route ends the request from there.
 *
 * It lives as long as the stream, so it keeps only the parts of the request it uses (not the
 * request's error and header builders, whose closures hold the route's whole frame).
 */
export class ClientRelay {
  readonly readable: ReadableStream<Uint8Array>;
  readonly ended: Promise<Ending>;
  readonly #settle: (ending: Ending) => void;
  readonly #ctx: RequestContext;
  readonly #dialect: DialectStream;
  readonly #timings: StreamTimings;
  readonly #beforeClose: (() => void) | undefined;
  #first: Promise<FirstRead> | undefined;
  readonly #upstreamStarted: () => boolean;
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  #reader: Reader | undefined;
  readonly #clock: StreamClock;
  #cancelTimer: (() => void) | undefined;
  #lastSentAt: number;
  #lastUpstreamAt: number;
  #timeout: ProxyError | undefined;
  #closed = false;

  constructor(request: EarlyStreamRequest, first: Promise<FirstRead>, opened: boolean, upstreamStarted: () => boolean) {
    this.#ctx = request.ctx;
    this.#dialect = request.dialect;
    this.#timings = request.timings;
    this.#beforeClose = request.beforeClose;
    this.#first = first;
    this.#upstreamStarted = upstreamStarted;
    this.#clock = request.clock ?? RUNTIME_CLOCK;
    this.#lastSentAt = this.#clock.now();
    this.#lastUpstreamAt = this.#lastSentAt;
    const { promise, resolve } = Promise.withResolvers<Ending>();
    this.ended = promise;
    this.#settle = resolve;
    this.#ctx.hooks.streamOpened();
    this.readable = this.#clientStream(opened);
  }

  /** Its callbacks close over this relay alone (a closure shares the frame it was made in). */
  #clientStream(opened: boolean): ReadableStream<Uint8Array> {
    return new ReadableStream<Uint8Array>({
      start: (controller) => {
        this.#controller = controller;
        // Bun sends the status line with the first body bytes: an opening must carry some.
        if (opened) this.#send(this.#dialect.opening() ?? this.#dialect.keepalive());
        this.#arm();
      },
      pull: () => this.#pull(),
      cancel: () => this.#clientGone(),
    });
  }

  async #pull(): Promise<void> {
    try {
      if (this.#first !== undefined) {
        const first = await this.#first;
        // Dropped once taken: it holds the first chunk for as long as the stream is open.
        this.#first = undefined;
        this.#reader = first.reader;
        if ("failure" in first) {
          this.#failLate(first.failure);
          return;
        }
        if (this.#deliver(first.read)) return;
      }
      while (this.#reader !== undefined && !this.#closed) {
        if (this.#deliver(await this.#reader.read())) return;
      }
    } catch (error) {
      this.#failLate(error);
    }
  }

  /** Returns true once something was sent or the stream closed. */
  #deliver(read: ReadResult): boolean {
    if (this.#closed) return true;
    const [dialect, ctx] = [this.#dialect, this.#ctx];
    if (read.done) {
      ctx.markDone();
      const tail = dialect.end();
      if (tail instanceof ProxyError) this.#failLate(tail);
      else this.#finish(tail);
      return true;
    }
    this.#lastUpstreamAt = this.#clock.now();
    ctx.markFirstToken();
    const out = dialect.push(read.value);
    if (out === undefined || out.byteLength === 0) return false;
    this.#send(out);
    return true;
  }

  #send(bytes: Uint8Array | undefined): void {
    if (this.#closed || bytes === undefined || bytes.byteLength === 0) return;
    this.#controller?.enqueue(bytes);
    this.#ctx.traced?.capture.streamed(bytes);
    this.#ctx.markFirstByte();
    this.#ctx.sent(bytes.byteLength);
    this.#lastSentAt = this.#clock.now();
  }

  #finish(tail: Uint8Array | undefined): void {
    this.#send(tail);
    const workerError = this.#dialect.workerError;
    this.#close(workerError === undefined ? undefined : new ProxyError("WORKER_STREAM_BROKEN", 502, workerError));
  }

  #failLate(thrown: unknown): void {
    if (this.#closed) return;
    const signal = this.#ctx.signal;
    const error = this.#timeout ?? (signal.aborted ? asProxyError(signal.reason) : brokenStream(thrown));
    if (error.code === "CLIENT_GONE") {
      this.#clientGone();
      return;
    }
    this.#send(this.#dialect.fail(error));
    this.#reader?.cancel().catch(() => {});
    this.#close(error);
  }

  #close(error: ProxyError | undefined): void {
    if (this.#closed) return;
    this.#closed = true;
    this.#cancelTimer?.();
    this.#ctx.hooks.streamClosed();
    this.#beforeClose?.();
    try {
      this.#controller?.close();
    } catch {
      // Already closed by the runtime (client gone): nothing to flush.
    }
    this.#settle({ status: 200, error });
  }

  #clientGone(): void {
    if (this.#closed) return;
    if (this.#dialect.delivered) {
      // The client had the whole response: it ends as if the worker's stream had ended.
      this.#reader?.cancel().catch(() => {});
      this.#ctx.markDone();
      this.#finish(undefined);
      return;
    }
    this.#closed = true;
    this.#cancelTimer?.();
    this.#ctx.hooks.streamClosed();
    this.#settle({ status: 499, error: clientGone() });
    this.#reader?.cancel().catch(() => {});
  }

  /** One timer per stream, re-armed for whichever is due first: a keepalive or the silence bound. */
  #arm(): void {
    const { keepaliveIntervalMs, silenceTimeoutMs } = this.#timings;
    const now = this.#clock.now();
    // An interval of 0 turns keepalives off; the silence bound still holds.
    const keepaliveDue = keepaliveIntervalMs > 0 ? this.#lastSentAt + keepaliveIntervalMs - now : Number.POSITIVE_INFINITY;
    const silenceDue = this.#lastUpstreamAt + silenceTimeoutMs - now;
    this.#cancelTimer = this.#clock.setTimer(Math.max(1, Math.min(keepaliveDue, silenceDue)), () => this.#tick());
  }

  #tick(): void {
    if (this.#closed) return;
    const now = this.#clock.now();
    const [timings, dialect, ctx] = [this.#timings, this.#dialect, this.#ctx];
    if (!this.#upstreamStarted()) this.#lastUpstreamAt = now;
    if (now - this.#lastUpstreamAt >= timings.silenceTimeoutMs) {
      this.#timeout = new ProxyError("WORKER_TIMEOUT", 504, "The generation worker sent nothing for too long");
      ctx.abortLegs(this.#timeout);
      this.#failLate(this.#timeout);
      return;
    }
    if (timings.keepaliveIntervalMs > 0 && now - this.#lastSentAt >= timings.keepaliveIntervalMs) {
      const keepalive = dialect.keepalive();
      if (keepalive !== undefined) ctx.hooks.keepaliveSent();
      this.#send(keepalive);
      this.#lastSentAt = now;
    }
    this.#arm();
  }
}

function brokenStream(thrown: unknown): ProxyError {
  if (thrown instanceof ProxyError) return thrown;
  return new ProxyError("WORKER_STREAM_BROKEN", 502, "The generation worker's stream broke off", { cause: thrown });
}
