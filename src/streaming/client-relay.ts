import type { ByteReader, FirstRead } from "../bytes.ts";
import type { ReadableStreamReadResult } from "node:stream/web";
import { asProxyError, clientGone, ProxyError } from "../errors.ts";
import type { RequestContext } from "../request/context.ts";
import { settleWithin } from "../timers.ts";
import type { DialectStream } from "./dialect.ts";
import {
  RUNTIME_CLOCK,
  type Answer,
  type EarlyStreamRequest,
  type Ending,
  type StreamClock,
  type StreamTimings,
} from "./stream-request.ts";

/**
 * The one streaming mechanism, whose first state is the start wait: up to the start wait for
 * the pipeline's first chunk. Answered in time → reply as the worker would (a failure keeps
 * its HTTP status); still running → 200 at once, the dialect's opening, keepalives on every
 * silence, the relay when it comes, and a late failure in-band. Never ends the request itself:
 * `ended` says when.
 */
export async function respondWithStream(request: EarlyStreamRequest): Promise<Answer> {
  const { first, started } = firstReadOf(request.upstream);
  const settled = await settleWithin(first, request.timings.startWaitMs);
  if (settled === "rejected") {
    const error = await first.then(() => new ProxyError("INTERNAL", 500, "Internal server error"), asProxyError);
    const inBand = request.dialect.refusal?.(error);
    if (inBand !== undefined) return refusedInBand(request, inBand, error);
    return { response: request.errorResponse(error), ended: Promise.resolve({ status: error.status, error }) };
  }
  const relay = new ClientRelay(request, first, settled === "pending", started);
  return { response: new Response(relay.readable, { status: 200, headers: request.headers() }), ended: relay.ended };
}

/** A failure the dialect states in a whole 200 stream of its own (the request still failed). */
function refusedInBand(request: EarlyStreamRequest, bytes: Uint8Array, error: ProxyError): Answer {
  request.ctx.markFirstByte();
  request.ctx.sent(bytes.byteLength);
  request.ctx.traced?.capture.streamed(bytes);
  request.beforeClose?.();
  const response = new Response(bytes, { status: 200, headers: request.headers() });
  return { response, ended: Promise.resolve({ status: 200, error }) };
}

/**
 * The worker stream's first read, and whether the stream has come yet. Made apart from the
 * async function above so the relay, which keeps `started`, keeps nothing else of its frame.
 */
function firstReadOf(upstream: EarlyStreamRequest["upstream"]): { first: Promise<FirstRead>; started: () => boolean } {
  let upstreamStarted = false;
  const first = upstream.then(async (body): Promise<FirstRead> => {
    upstreamStarted = true;
    if (!(body instanceof ReadableStream)) return body;
    // The runtime's own reader: a wrapper would cost a promise and an object per chunk.
    const reader: ByteReader = body.getReader();
    // The worker answered 200: a stream that breaks before its first byte fails in-band, as
    // later (a 502 WORKER_STREAM_BROKEN), never as the proxy's own 500.
    try {
      return { reader, read: await reader.read() };
    } catch (failure) {
      return { reader, failure };
    }
  });
  return { first, started: () => upstreamStarted };
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
  #reader: ByteReader | undefined;
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
  #deliver(read: ReadableStreamReadResult<Uint8Array>): boolean {
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
