import { clientGone, ProxyError } from "../errors.ts";
import type { SharedAdmissionWords } from "../routing/shared-load.ts";

/**
 * Admission control: at most `limit` requests in flight; a request over it waits up to
 * `waitMs` in a bounded queue (as long as the limit, first come first served) for a slot,
 * else it is refused with 429 — never left hanging.
 */
export class Admission {
  readonly #limit: number;
  readonly #waitMs: number;
  readonly #queue: (() => void)[] = [];
  #inFlight = 0;

  constructor(limit: number, waitMs: number) {
    this.#limit = limit;
    this.#waitMs = waitMs;
  }

  get inFlight(): number {
    return this.#inFlight;
  }

  /** Requests queued for a slot now. */
  get waiting(): number {
    return this.#queue.length;
  }

  /** 0 = no limit. */
  get limit(): number {
    return this.#limit;
  }

  /** A slot now: its release function (idempotent); undefined when none is free. */
  tryAcquire(): (() => void) | undefined {
    // A freed slot passes straight to the first waiter, so a newcomer can never take it in between.
    if (this.#limit > 0 && this.#inFlight >= this.#limit) return undefined;
    this.#inFlight++;
    return this.#release();
  }

  /** Resolves with the slot's release function (idempotent), or rejects with a 429. */
  async acquire(signal: AbortSignal): Promise<() => void> {
    const now = this.tryAcquire();
    if (now !== undefined) return now;
    await this.#wait(signal);
    return this.#release();
  }

  #release(): () => void {
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      const next = this.#queue.shift();
      if (next) next();
      else this.#inFlight--;
    };
  }

  #wait(signal: AbortSignal): Promise<void> {
    if (this.#waitMs <= 0 || this.#queue.length >= this.#limit) return Promise.reject(overloaded());
    return new Promise((resolve, reject) => {
      const done = (error?: ProxyError): void => {
        clearTimeout(timer);
        signal.removeEventListener("abort", onAbort);
        const at = this.#queue.indexOf(wake);
        if (at >= 0) this.#queue.splice(at, 1);
        if (error) reject(error);
        else resolve();
      };
      const wake = (): void => done();
      const onAbort = (): void => done(clientGone());
      const timer = setTimeout(() => done(overloaded()), this.#waitMs);
      signal.addEventListener("abort", onAbort, { once: true });
      this.#queue.push(wake);
    });
  }
}

/**
 * The same contract over counts every event loop shares (num_workers > 1): a slot is taken by
 * one compare-and-swap on the process's in-flight count, so the limit holds for the process.
 * A request over it waits (as many as the limit, across loops) for a release in any loop,
 * woken through `Atomics.waitAsync`; waiters race for a freed slot, so the order is first come
 * first served only within a loop.
 */
export class SharedAdmission {
  readonly #limit: number;
  readonly #waitMs: number;
  readonly #words: SharedAdmissionWords;

  constructor(limit: number, waitMs: number, words: SharedAdmissionWords) {
    this.#limit = limit;
    this.#waitMs = waitMs;
    this.#words = words;
  }

  get inFlight(): number {
    return this.#words.admitted();
  }

  get waiting(): number {
    return this.#words.waiting();
  }

  get limit(): number {
    return this.#limit;
  }

  tryAcquire(): (() => void) | undefined {
    return this.#words.tryAdmit(this.#limit) ? this.#release() : undefined;
  }

  async acquire(signal: AbortSignal): Promise<() => void> {
    if (!this.#words.tryAdmit(this.#limit)) await this.#wait(signal);
    return this.#release();
  }

  #release(): () => void {
    let held = true;
    return () => {
      if (!held) return;
      held = false;
      this.#words.release();
    };
  }

  async #wait(signal: AbortSignal): Promise<void> {
    const words = this.#words;
    if (this.#waitMs <= 0 || !words.startWaiting(this.#limit)) throw overloaded();
    const deadline = performance.now() + this.#waitMs;
    try {
      for (;;) {
        if (signal.aborted) throw clientGone();
        const seen = words.releases();
        if (words.tryAdmit(this.#limit)) return;
        const left = deadline - performance.now();
        if (left <= 0) throw overloaded();
        // oxlint-disable-next-line no-await-in-loop -- wait for the next release anywhere, then try again
        await words.nextRelease(seen, Math.min(left, 50));
      }
    } finally {
      words.stopWaiting();
    }
  }
}

/** What the server's admission is, whichever counts it keeps. */
export type AdmissionControl = Pick<Admission, "inFlight" | "waiting" | "limit" | "tryAcquire" | "acquire">;

function overloaded(): ProxyError {
  return new ProxyError("OVERLOADED", 429, "Too many requests in flight; retry shortly");
}
