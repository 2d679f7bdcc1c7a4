import { ProxyError } from "../errors.ts";

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

  /** Resolves with the slot's release function (idempotent), or rejects with a 429. */
  async acquire(signal: AbortSignal): Promise<() => void> {
    // A freed slot passes straight to the first waiter, so a newcomer can never take it in between.
    if (this.#limit > 0 && this.#inFlight >= this.#limit) await this.#wait(signal);
    else this.#inFlight++;
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
      const onAbort = (): void => done(new ProxyError("CLIENT_GONE", 499, "Client disconnected"));
      const timer = setTimeout(() => done(overloaded()), this.#waitMs);
      signal.addEventListener("abort", onAbort, { once: true });
      this.#queue.push(wake);
    });
  }
}

function overloaded(): ProxyError {
  return new ProxyError("OVERLOADED", 429, "Too many requests in flight; retry shortly");
}
