import type { AnswerHead } from "./answer-parser.ts";
import { SignalledExchange } from "./exchange.ts";

/** fetch's contract: a Response at the answer's head, its body fed from the socket with backpressure. */
export class ResponseExchange extends SignalledExchange {
  readonly response: Promise<Response>;
  readonly #resolve: (response: Response) => void;
  readonly #reject: (error: Error) => void;
  #controller: ReadableStreamDefaultController<Uint8Array> | undefined;
  #headed = false;

  constructor(signal: AbortSignal | undefined) {
    super(signal, undefined);
    const { promise, resolve, reject } = Promise.withResolvers<Response>();
    this.response = promise;
    this.#resolve = resolve;
    this.#reject = reject;
  }

  head(head: AnswerHead): void {
    const nullBody = head.status === 204 || head.status === 304;
    // Made before the call counts as answered: a head no Response can hold fails the call, never leaves it hanging.
    const response = new Response(nullBody ? null : this.#bodyStream(), {
      status: head.status,
      statusText: head.statusText,
      headers: head.headers,
    });
    this.#headed = true;
    this.#resolve(response);
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
