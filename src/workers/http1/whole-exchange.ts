import type { AnswerHead } from "./answer-parser.ts";
import { concatBytes } from "../../bytes.ts";
import { SignalledExchange, type CallTimeout } from "./exchange.ts";

/** A whole answer, read without a Response: its status, headers and body bytes. */
export interface WholeAnswer {
  readonly status: number;
  readonly headers: Headers;
  readonly bytes: Uint8Array;
}

export interface WholeOptions {
  /** The whole call's bound. */
  readonly timeout?: CallTimeout | undefined;
  /** A body larger than this is refused (`tooLarge`), or for an error status cut to its prefix. */
  readonly limit: number;
  readonly tooLarge: () => Error;
  /** The answer's head arrived (its status line and headers); a throw refuses the answer. */
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
  /** A success's declared length (within the bound): its body gathered into one buffer, shown to the guard once whole. */
  #declaredLength: number | undefined;
  #declared: Uint8Array | undefined;

  constructor(signal: AbortSignal | undefined, options: WholeOptions) {
    super(signal, options.timeout);
    const { promise, resolve, reject } = Promise.withResolvers<WholeAnswer>();
    this.answer = promise;
    this.#resolve = resolve;
    this.#reject = reject;
    this.#options = options;
  }

  head(head: AnswerHead): void {
    this.#head = head;
    const declared = head.length;
    if (head.status < 400 && declared !== undefined) {
      if (declared > this.#options.limit) {
        this.connection?.abandon();
        this.settle(this.#options.tooLarge());
        return;
      }
      // Read as fetch reads a declared body (the framing stops it there), then checked whole: a
      // token-id list cut across pieces cost the guard a second scan of each piece it began in.
      this.#declaredLength = declared;
    }
    this.#options.onHead?.(head.status, head.headers);
  }

  body(bytes: Uint8Array): void {
    if (this.over) return;
    const length = this.#declaredLength;
    if (length !== undefined) {
      // The whole body in one piece (most answers: the socket reads up to 128 KB at once) is kept as it came.
      if (this.#size === 0 && bytes.byteLength === length) this.#declared = bytes;
      else {
        this.#declared ??= Buffer.allocUnsafe(length);
        this.#declared.set(bytes, this.#size);
      }
      this.#size += bytes.byteLength;
      return;
    }
    const { limit } = this.#options;
    const room = limit - this.#size;
    if (bytes.byteLength > room) {
      // An error's body is kept as its first `limit` bytes; a success that large is refused.
      if ((this.#head?.status ?? 0) < 400) {
        this.connection?.abandon();
        this.settle(this.#options.tooLarge());
        return;
      }
      this.#take(bytes.subarray(0, room));
      this.connection?.abandon();
      this.end();
      return;
    }
    this.#take(bytes);
  }

  end(): void {
    if (this.over) return;
    this.finish();
    const head = this.#head;
    if (head === undefined) return;
    // Only what came (all of it, by the framing): the buffer is unzeroed, and must never show more.
    const declared = this.#declaredLength === undefined ? undefined : (this.#declared?.subarray(0, this.#size) ?? new Uint8Array());
    if (declared !== undefined && !this.#checked(declared)) return;
    const bytes = declared ?? concatBytes(this.#parts) ?? new Uint8Array();
    this.#resolve({ status: head.status, headers: head.headers, bytes });
  }

  protected failed(error: Error): void {
    this.#reject(error);
  }

  #take(bytes: Uint8Array): void {
    if (!this.#checked(bytes)) return;
    this.#parts.push(bytes);
    this.#size += bytes.byteLength;
  }

  /** Shows bytes to the guard; a refusal fails the call (its connection dropped) and answers false. */
  #checked(bytes: Uint8Array): boolean {
    try {
      this.#options.onPiece?.(bytes);
      return true;
    } catch (refusal) {
      // At the end the connection is back in its pool, fit for reuse: only a refusal mid-answer drops it.
      if (!this.over) this.connection?.abandon();
      this.settle(refusal instanceof Error ? refusal : new Error(String(refusal)));
      return false;
    }
  }
}
