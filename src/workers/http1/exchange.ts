import type { AnswerHead } from "./answer-parser.ts";
import type { Exchange, RawBody, WorkerConnection } from "./connection.ts";
import type { Deadlines } from "../../deadline-wheel.ts";

/** A call's time bound: its connection is dropped and it fails with a TimeoutError past it, on the shared wheel when given. */
export interface CallTimeout {
  readonly ms: number;
  readonly deadlines?: Deadlines | undefined;
}

/**
 * One call on a connection, from its start to its end, hearing its abort signal throughout (the
 * exchange is the signal's listener object: no closure per call) and keeping its deadline.
 * Subclasses say what becomes of the answer.
 */
export abstract class SignalledExchange implements Exchange {
  readonly #signal: AbortSignal | undefined;
  #clearTimeout: (() => void) | undefined;
  protected connection: WorkerConnection | undefined;
  protected over = false;

  constructor(signal: AbortSignal | undefined, timeout: CallTimeout | undefined) {
    this.#signal = signal;
    signal?.addEventListener("abort", this, { once: true });
    if (timeout !== undefined) this.#clearTimeout = scheduled(timeout, this);
  }

  /** Whether the call is over (settled, aborted, timed out): it wants no connection now. */
  get ended(): boolean {
    return this.over;
  }

  /** Sends the request on `connection`; none: the call ended while waiting for one. */
  start(connection: WorkerConnection | undefined, head: string, body: RawBody): void {
    if (connection === undefined) return;
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

  /** Its deadline passed. */
  expired(): void {
    if (this.over) return;
    this.connection?.abandon();
    this.settle(new DOMException("Timed out", "TimeoutError"));
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

  /** The deadline no longer applies (a stream's bounds only the wait for its head). */
  protected clearTimeout(): void {
    this.#clearTimeout?.();
    this.#clearTimeout = undefined;
  }

  /** The call is over: its signal and deadline no longer matter. */
  protected finish(): void {
    this.over = true;
    this.#signal?.removeEventListener("abort", this);
    this.clearTimeout();
  }
}

/** What an aborted call fails with: the signal's reason, as fetch's. */
export function abortReason(signal: AbortSignal | undefined): Error {
  const reason: unknown = signal?.reason;
  return reason instanceof Error ? reason : new DOMException("The operation was aborted", "AbortError");
}

function scheduled(timeout: CallTimeout, exchange: SignalledExchange): () => void {
  const fire = (): void => exchange.expired();
  if (timeout.deadlines !== undefined) return timeout.deadlines.schedule(timeout.ms, fire);
  const timer = setTimeout(fire, timeout.ms);
  return () => clearTimeout(timer);
}
