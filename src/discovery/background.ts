/** One background loop with a start that resolves when the loop says it is ready, and a stop that waits for it. */

import type { Logger } from "../observability/logger.ts";
import { messageOf } from "./backoff.ts";
import type { DiscoveryEvent } from "./types.ts";

export type Loop = (signal: AbortSignal, ready: () => void) => Promise<void>;

export class Background {
  readonly #what: string;
  readonly #logger: Logger;
  readonly #controller = new AbortController();
  #task: Promise<void> | undefined;

  constructor(what: string, logger: Logger) {
    this.#what = what;
    this.#logger = logger;
  }

  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** Resolves once the loop called `ready`, or when it ends or is stopped first. Rejects on a second start. */
  start(loop: Loop): Promise<void> {
    if (this.#task !== undefined) return Promise.reject(new Error(`${this.#what} was already started`));
    const { promise, resolve } = Promise.withResolvers<void>();
    const signal = this.#controller.signal;
    signal.addEventListener("abort", () => resolve(), { once: true });
    this.#task = loop(signal, resolve)
      .catch((error: unknown) => this.#logger.error(`${this.#what} stopped on an unexpected error`, { error: messageOf(error) }))
      .finally(resolve);
    return promise;
  }

  async stop(): Promise<void> {
    this.#controller.abort();
    await this.#task;
  }

  /**
   * The caller's event handler, guarded: nothing after stop(), and a handler that throws is
   * logged rather than taken for an etcd failure (which would leave the worker list half-applied).
   */
  deliverTo(onEvent: (event: DiscoveryEvent) => void): (event: DiscoveryEvent) => void {
    return (event) => {
      if (this.#controller.signal.aborted) return;
      try {
        onEvent(event);
      } catch (error) {
        this.#logger.error("A discovery event handler threw", {
          event: `${event.kind} ${event.role} ${event.origin}`,
          error: messageOf(error),
        });
      }
    };
  }
}
