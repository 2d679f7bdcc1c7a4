import type { AnswerHead } from "./answer-parser.ts";
import type { Exchange, WorkerConnection } from "./connection.ts";
import type { Deadlines } from "../../deadline-wheel.ts";

export type RawBody = string | Uint8Array | ReadableStream<Uint8Array> | undefined;

/**
 * One call on a connection, from its start to its end, hearing its abort signal throughout (the
 * exchange is the signal's listener object: no closure per call). Subclasses say what becomes
 * of the answer.
 */
abstract class SignalledExchange implements Exchange {
  readonly #signal: AbortSignal | undefined;
  protected connection: WorkerConnection | undefined;
  protected over = false;

  constructor(signal: AbortSignal | undefined) {
    this.#signal = signal;
    signal?.addEventListener("abort", this, { once: true });
  }

  start(connection: WorkerConnection, head: string, body: RawBody): void {
    if (this.over) {
      connection.abandon();
      return;
    }
    this.connection = connection;
    connection.send(head, body, this);
  }

  handleEvent(): void {
    if (this.over) return;
    this.connection?.abandon();
    this.settle(abortReason(this.#signal));
  }

  fail(error: Error): void {
    if (!this.over) this.settle(error);
  }

  abstract head(head: AnswerHead): void;
  abstract body(bytes: Uint8Array): void;
  abstract end(): void;
  /** The call failed: `error` is its reason. */
  protected abstract failed(error: Error): void;

  protected settle(error: Error): void {
    this.finish();
    this.failed(error);
  }

  /** The call is over: the signal no longer matters. */
  protected finish(): void {
    this.over = true;
    this.#signal?.removeEventListener("abort", this);
  }
}

/** What an aborted call fails with: the signal's reason, as fetch's. */
export function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new DOMException("The operation was aborted", "AbortError");
}

/** fetch's contract: a Response at the answer's head, its body fed from the socket with backpressure. */
export class ResponseExchange extends SignalledExchange {
  readonly response: Promise<Response>;
  readonly #resolve: (response: Response) => void;
  readonly #reject: (error: Error) => void;
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  #headed = false;

  constructor(signal: AbortSignal | undefined) {
    super(signal);
    const { promise, resolve, reject } = Promise.withResolvers<Response>();
    this.response = promise;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  head(head: AnswerHead): void {
    this.#headed = true;
    const nullBody = head.status === 204 || head.status === 304;
    this.#resolve(
      new Response(nullBody ? null : this.#bodyStream(), { status: head.status, statusText: head.statusText, headers: head.headers }),
    );
  }

  body(bytes: Uint8Array): void {
    const controller = this.#controller;
    if (controller === undefined || this.over) return;
    controller.enqueue(bytes);
    if ((controller.desiredSize ?? 1) <= 0) this.connection?.pause();
  }

  end(): void {
    if (this.over) return;
    this.finish();
    try {
      this.#controller?.close();
    } catch {
      // The consumer cancelled the body: nothing to close.
    }
  }

  protected failed(error: Error): void {
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
          this.connection?.resume();
        },
        cancel: () => {
          if (this.over) return;
          this.finish();
          this.connection?.abandon();
        },
      },
      // Pieces held before the socket pauses: a consumer a few pieces behind costs no pause.
      { highWaterMark: 16 },
    );
  }
}

/** A whole answer, read without a Response: its status, headers and body bytes. */
export interface WholeAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly bytes: Uint8Array;
}

export interface WholeOptions {
  /** The whole call's bound: its connection is dropped and it fails with a TimeoutError past it, on the shared wheel when given. */
  readonly timeout?: { readonly ms: number; readonly deadlines?: Deadlines | undefined } | undefined;
  /** A body larger than this is refused (`tooLarge`), or for an error status cut to its prefix. */
  readonly limit: number;
  readonly tooLarge: () => Error;
  /** The answer's head arrived (its status line and headers). */
  readonly onHead?: ((status: number, headers: Headers) => void) | undefined;
  /** Each piece of the body as it arrives (lent for the call only); a throw refuses the answer. */
  readonly onPiece?: ((piece: Uint8Array) => void) | undefined;
}

/**
 * A non-streamed answer gathered as it arrives, within its bound, its pieces shown to a guard:
 * what readBounded does on a Response, with no Response, stream or read loop (issue #37).
 */
export class WholeExchange extends SignalledExchange {
  readonly answer: Promise<WholeAnswer>;
  readonly #resolve: (answer: WholeAnswer) => void;
  readonly #reject: (error: Error) => void;
  readonly #options: WholeOptions;
  readonly #parts: Uint8Array[] = [];
  #size = 0;
  #head: AnswerHead | undefined;
  #clearTimeout: (() => void) | undefined;

  constructor(signal: AbortSignal | undefined, options: WholeOptions) {
    super(signal);
    const { promise, resolve, reject } = Promise.withResolvers<WholeAnswer>();
    this.answer = promise;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#options = options;
    const timeout = options.timeout;
    if (timeout !== undefined) this.#clearTimeout = scheduled(timeout.ms, timeout.deadlines, this);
  }

  /** Its deadline passed (the exchange is the deadline's callback object). */
  expired(): void {
    if (this.over) return;
    this.connection?.abandon();
    this.settle(new DOMException("Timed out", "TimeoutError"));
  }

  protected override finish(): void {
    super.finish();
    this.#clearTimeout?.();
    this.#clearTimeout = undefined;
  }

  head(head: AnswerHead): void {
    this.#head = head;
    const declared = head.headers.get("content-length");
    if (head.status < 400 && declared !== null && Number(declared) > this.#options.limit) {
      this.connection?.abandon();
      this.settle(this.#options.tooLarge());
      return;
    }
    this.#options.onHead?.(head.status, head.headers);
  }

  body(bytes: Uint8Array): void {
    if (this.over) return;
    const { limit, onPiece } = this.#options;
    const room = limit - this.#size;
    if (bytes.byteLength > room) {
      // An error's body is kept as its first `limit` bytes; a success that large is refused.
      if ((this.#head?.status ?? 0) < 400) {
        this.connection?.abandon();
        this.settle(this.#options.tooLarge());
        return;
      }
      this.#take(bytes.subarray(0, room), onPiece);
      this.connection?.abandon();
      this.end();
      return;
    }
    this.#take(bytes, onPiece);
  }

  end(): void {
    if (this.over) return;
    this.finish();
    const head = this.#head;
    if (head === undefined) return;
    const parts = this.#parts;
    const bytes = parts.length === 1 ? (parts[0] ?? new Uint8Array()) : joinedParts(parts, this.#size);
    this.#resolve({ status: head.status, headers: head.headers, bytes });
  }

  protected failed(error: Error): void {
    this.#reject(error);
  }

  #take(bytes: Uint8Array, onPiece: WholeOptions["onPiece"]): void {
    try {
      onPiece?.(bytes);
    } catch (refusal) {
      this.connection?.abandon();
      this.settle(refusal instanceof Error ? refusal : new Error(String(refusal)));
      return;
    }
    this.#parts.push(bytes);
    this.#size += bytes.byteLength;
  }
}

function scheduled(ms: number, deadlines: Deadlines | undefined, exchange: WholeExchange): () => void {
  const fire = (): void => exchange.expired();
  if (deadlines !== undefined) return deadlines.schedule(ms, fire);
  const timer = setTimeout(fire, ms);
  return () => clearTimeout(timer);
}

function joinedParts(parts: readonly Uint8Array[], size: number): Uint8Array {
  const out = new Uint8Array(size);
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.byteLength;
  }
  return out;
}
