import type { ByteReader, FirstRead } from "../bytes.ts";
import type { ReadableStreamReadResult } from "node:stream/web";
import { asProxyError, clientGone, ProxyError } from "../errors.ts";
import type { RequestContext } from "../request/context.ts";
import type { DeadlineTarget } from "../deadline-wheel.ts";
import type { DialectStream } from "./dialect.ts";
import {
  RUNTIME_CLOCK,
  type EarlyStreamRequest,
  type Ending,
  type EndingListener,
  type EndingSource,
  type StreamClock,
  type StreamTimings,
} from "./stream-request.ts";

/**
 * The client's body, one object per stream: the source of a direct stream (each chunk written
 * straight to the client's socket, no queue nor pull promise between), its read loop over the
 * worker's stream, and one deadline on the shared clock for keepalive and silence. It closes
 * once, telling the route (`whenEnded`), which ends the request from there.
 *
 * It lives as long as the stream, so it keeps only the parts of the request it uses (not the
 * request's error and header builders, whose closures hold the route's whole frame), and
 * drops the first read once relayed.
 */
export class ClientRelay implements EndingSource, DeadlineTarget {
  readonly readable: ReadableStream<Uint8Array>;
  #listener: EndingListener | undefined;
  #ending: Ending | undefined;
  readonly #ctx: RequestContext;
  readonly #dialect: DialectStream;
  readonly #timings: StreamTimings;
  readonly #clock: StreamClock;
  readonly #idle: { restore(): void } | undefined;
  #first: Promise<FirstRead> | undefined;
  #upstreamStarted: boolean;
  #controller: ReadableStreamDirectController | undefined;
  /** Bytes sent before the runtime asked for the body (the opening, a keepalive). */
  #early: Uint8Array[] | undefined;
  /** The client's socket is full: the next worker read waits for it to drain. */
  #drained: Promise<number> | undefined;
  #reader: ByteReader | undefined;
  /** The deadline armed on the clock (its handle), while one is. */
  #armed: unknown;
  #lastSentAt: number;
  #lastUpstreamAt: number;
  #timeout: ProxyError | undefined;
  #closed = false;

  constructor(request: EarlyStreamRequest, first: Promise<FirstRead>, opened: boolean) {
    this.#ctx = request.ctx;
    this.#dialect = request.dialect;
    this.#timings = request.timings;
    this.#clock = request.timings.clock ?? RUNTIME_CLOCK;
    this.#idle = request.idle;
    this.#first = first;
    // Opened before the pipeline answered: its wait is not the worker's silence.
    this.#upstreamStarted = !opened;
    if (opened)
      void request.upstream.then(
        () => this.#started(),
        () => {},
      );
    this.#lastSentAt = this.#clock.now();
    this.#lastUpstreamAt = this.#lastSentAt;
    this.#ctx.hooks.streamOpened();
    this.readable = new ReadableStream<Uint8Array>(this);
    // Bun sends the status line with the first body bytes: an opening must carry some.
    if (opened) this.#send(this.#dialect.opening() ?? this.#dialect.keepalive());
    this.#arm();
  }

  /** A direct stream's source: the runtime reads it through `pull`, and the relay writes when it has bytes. */
  get type(): "direct" {
    return "direct";
  }

  /** The runtime asks for the body: the server once, a reader on every read (the relay runs once). */
  pull(controller: ReadableStreamDirectController): void {
    if (this.#controller !== undefined) return;
    this.#controller = controller;
    const early = this.#early;
    this.#early = undefined;
    if (early !== undefined) for (const bytes of early) this.#write(bytes);
    if (this.#closed) this.#end();
    else void this.#relay();
  }

  /** `listener` is told how the request ended, once, in a microtask after the stream closed. */
  whenEnded(listener: EndingListener): void {
    this.#listener = listener;
    if (this.#ending !== undefined) this.#tell(this.#ending);
  }

  /** The client went away (or its reader cancelled). */
  cancel(): void {
    this.#clientGone();
  }

  #started(): void {
    this.#upstreamStarted = true;
  }

  async #relay(): Promise<void> {
    try {
      const first = await this.#first;
      // Dropped once taken: it holds the first chunk for as long as the stream is open.
      this.#first = undefined;
      if (first === undefined) return;
      this.#reader = first.reader;
      if (this.#closed) {
        first.reader.cancel().catch(() => {});
        return;
      }
      if ("failure" in first) {
        this.#failLate(first.failure);
        return;
      }
      const reader = first.reader;
      for (let read = first.read; !this.#deliver(read); read = await reader.read()) {
        const drained = this.#drained;
        if (drained === undefined) continue;
        this.#drained = undefined;
        await drained;
        if (this.#closed) return;
      }
    } catch (error) {
      this.#failLate(error);
    }
  }

  /** Returns true once the stream closed. */
  #deliver(read: ReadableStreamReadResult<Uint8Array>): boolean {
    if (this.#closed) return true;
    if (read.done) {
      this.#ctx.markDone();
      const tail = this.#dialect.end();
      if (tail instanceof ProxyError) this.#failLate(tail);
      else this.#finish(tail);
      return true;
    }
    const now = this.#clock.now();
    this.#lastUpstreamAt = now;
    this.#ctx.markFirstToken();
    this.#send(this.#dialect.push(read.value), now);
    return false;
  }

  #send(bytes: Uint8Array | undefined, now = this.#clock.now()): void {
    if (this.#closed || bytes === undefined || bytes.byteLength === 0) return;
    if (this.#controller === undefined) (this.#early ??= []).push(bytes);
    else this.#write(bytes);
    const ctx = this.#ctx;
    ctx.traced?.capture.streamed(bytes);
    ctx.markFirstByte();
    ctx.sent(bytes.byteLength);
    this.#lastSentAt = now;
  }

  #write(bytes: Uint8Array): void {
    // A promise: accepted, but the socket is full (the bytes are buffered until it drains).
    const written = this.#controller?.write(bytes);
    if (written !== undefined && typeof written !== "number") this.#drained = written;
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
    this.#disarm();
    this.#ctx.hooks.streamClosed();
    this.#idle?.restore();
    this.#end();
    this.#settle({ status: 200, error });
  }

  /** Flushes what was written and ends the client's body (once the runtime asked for it). */
  #end(): void {
    try {
      this.#controller?.close();
    } catch {
      // Already closed by the runtime (client gone): nothing to flush.
    }
  }

  #settle(ending: Ending): void {
    this.#ending = ending;
    if (this.#listener !== undefined) this.#tell(ending);
  }

  #tell(ending: Ending): void {
    const listener = this.#listener;
    this.#listener = undefined;
    if (listener !== undefined) queueMicrotask(() => listener.requestEnded(ending));
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
    this.#disarm();
    this.#ctx.hooks.streamClosed();
    this.#settle({ status: 499, error: clientGone() });
    this.#reader?.cancel().catch(() => {});
  }

  /** One deadline per stream, re-armed for whichever is due first: a keepalive or the silence bound. */
  #arm(): void {
    const { keepaliveIntervalMs, silenceTimeoutMs } = this.#timings;
    const now = this.#clock.now();
    // An interval of 0 turns keepalives off; the silence bound still holds.
    const keepaliveDue = keepaliveIntervalMs > 0 ? this.#lastSentAt + keepaliveIntervalMs - now : Number.POSITIVE_INFINITY;
    const silenceDue = this.#lastUpstreamAt + silenceTimeoutMs - now;
    this.#armed = this.#clock.arm(Math.max(1, Math.min(keepaliveDue, silenceDue)), this);
  }

  #disarm(): void {
    if (this.#armed === undefined) return;
    this.#clock.disarm(this.#armed, this);
    this.#armed = undefined;
  }

  /** The deadline came: a keepalive is due, or the silence bound passed. */
  deadlinePassed(): void {
    this.#armed = undefined;
    if (this.#closed) return;
    const now = this.#clock.now();
    const timings = this.#timings;
    if (!this.#upstreamStarted) this.#lastUpstreamAt = now;
    if (now - this.#lastUpstreamAt >= timings.silenceTimeoutMs) {
      this.#timeout = new ProxyError("WORKER_TIMEOUT", 504, "The generation worker sent nothing for too long");
      this.#ctx.abortLegs(this.#timeout);
      this.#failLate(this.#timeout);
      return;
    }
    if (timings.keepaliveIntervalMs > 0 && now - this.#lastSentAt >= timings.keepaliveIntervalMs) {
      const keepalive = this.#dialect.keepalive();
      if (keepalive !== undefined) this.#ctx.hooks.keepaliveSent();
      this.#send(keepalive, now);
      this.#lastSentAt = now;
    }
    this.#arm();
  }
}

function brokenStream(thrown: unknown): ProxyError {
  if (thrown instanceof ProxyError) return thrown;
  return new ProxyError("WORKER_STREAM_BROKEN", 502, "The generation worker's stream broke off", { cause: thrown });
}
