import type { ReadableStreamReadResult } from "node:stream/web";
import type { ByteReader } from "../../bytes.ts";
import type { AnswerHead } from "./answer-parser.ts";
import { SignalledExchange, type CallTimeout } from "./exchange.ts";

/** A streamed answer at its head: its status, headers, and a reader fed by the socket. */
export interface StreamAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly reader: ByteReader;
}

/** Pieces held unread before the socket pauses: a reader a few pieces behind costs no pause. */
const HELD_PIECES = 16;
/** Bytes held unread before the socket pauses, however few the pieces: one read of a socket can bring 512 KiB. */
const HELD_BYTES = 256 * 1024;
const DONE: ReadableStreamReadResult<Uint8Array> = Object.freeze({ done: true, value: undefined });

/**
 * A streamed answer whose body is read straight from the socket: the exchange is its reader,
 * each piece handed to the waiting read as it arrives, with no ReadableStream, controller or
 * Response between (an open stream's memory and a chunk's cost, issue #37). Its deadline bounds
 * the wait for the head only: the relay bounds silence, never length.
 */
export class StreamExchange extends SignalledExchange implements ByteReader {
  readonly answer: Promise<StreamAnswer>;
  readonly #resolve: (answer: StreamAnswer) => void;
  readonly #reject: (error: Error) => void;
  readonly #held: Uint8Array[] = [];
  #heldBytes = 0;
  #waiting: PromiseWithResolvers<ReadableStreamReadResult<Uint8Array>> | undefined;
  #headed = false;
  #ended = false;
  #error: Error | undefined;
  #paused = false;

  constructor(signal: AbortSignal | undefined, timeout: CallTimeout | undefined) {
    super(signal, timeout);
    const { promise, resolve, reject } = Promise.withResolvers<StreamAnswer>();
    this.answer = promise;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  head(head: AnswerHead): void {
    this.#headed = true;
    this.clearTimeout();
    this.#resolve({ status: head.status, headers: head.headers, reader: this });
  }

  body(bytes: Uint8Array): void {
    if (this.over) return;
    const waiting = this.#waiting;
    if (waiting !== undefined) {
      this.#waiting = undefined;
      waiting.resolve({ done: false, value: bytes });
      return;
    }
    this.#held.push(bytes);
    this.#heldBytes += bytes.byteLength;
    if ((this.#held.length >= HELD_PIECES || this.#heldBytes >= HELD_BYTES) && !this.#paused) {
      this.#paused = true;
      this.connection?.pause();
    }
  }

  end(): void {
    if (this.over) return;
    this.finish();
    this.#ended = true;
    this.#wake();
  }

  protected failed(error: Error): void {
    if (!this.#headed) {
      this.#reject(error);
      return;
    }
    this.#error = error;
    this.#wake();
  }

  read(): Promise<ReadableStreamReadResult<Uint8Array>> {
    const piece = this.#held.shift();
    if (piece !== undefined) {
      this.#heldBytes -= piece.byteLength;
      if (this.#paused && this.#held.length < HELD_PIECES / 2 && this.#heldBytes < HELD_BYTES / 2) {
        this.#paused = false;
        // Once its answer is over the connection is not this call's: back in its pool, or another call's, paused for that one.
        if (!this.over) this.connection?.resume();
      }
      return Promise.resolve({ done: false, value: piece });
    }
    if (this.#error !== undefined) return Promise.reject(this.#error);
    if (this.#ended) return Promise.resolve(DONE);
    this.#waiting = Promise.withResolvers();
    return this.#waiting.promise;
  }

  /** The reader no longer wants the body: its connection cannot carry another request. */
  cancel(): Promise<void> {
    this.#held.length = 0;
    this.#heldBytes = 0;
    if (!this.over) {
      this.finish();
      this.connection?.abandon();
      this.#ended = true;
      this.#wake();
    }
    return Promise.resolve();
  }

  /** A read waiting for a piece hears of the end or the failure instead. */
  #wake(): void {
    const waiting = this.#waiting;
    if (waiting === undefined) return;
    this.#waiting = undefined;
    if (this.#error !== undefined) waiting.reject(this.#error);
    else waiting.resolve(DONE);
  }
}
