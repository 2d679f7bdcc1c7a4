/** Retry pacing for calls to etcd, and an interruptible wait. */

import type { ReconnectOptions } from "./types.ts";

const DEFAULT_INITIAL_MS = 100;
const DEFAULT_MAX_MS = 5000;

/** Exponential backoff with ±20 % jitter, so replicas that lost etcd together do not retry in step. */
export class Backoff {
  readonly #initialMs: number;
  readonly #maxMs: number;
  #attempt = 0;

  constructor(options: ReconnectOptions = {}) {
    this.#initialMs = Math.max(1, options.initialMs ?? DEFAULT_INITIAL_MS);
    this.#maxMs = Math.max(this.#initialMs, options.maxMs ?? DEFAULT_MAX_MS);
  }

  /** The wait before the next attempt; each call doubles the following one up to the cap. */
  next(): number {
    const base = Math.min(this.#maxMs, this.#initialMs * 2 ** Math.min(this.#attempt, 30));
    this.#attempt += 1;
    return Math.round(base * (0.8 + Math.random() * 0.4));
  }

  reset(): void {
    this.#attempt = 0;
  }
}

export function messageOf(error: unknown): string {
  if (error instanceof Error) return error.cause instanceof Error ? `${error.message}: ${error.cause.message}` : error.message;
  return String(error);
}
