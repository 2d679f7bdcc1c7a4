import type { EndedRequest } from "../observability/traffic-observer.ts";
import type { FailureRow } from "./snapshot.ts";

/** Worker error messages can be long; the page shows the start. */
const MAX_MESSAGE_CHARS = 300;

/** The last `capacity` failed requests, newest first: ids, workers and messages, never bodies or keys. */
export class FailureLog {
  readonly #rows: (FailureRow | undefined)[];
  #written = 0;

  constructor(capacity: number) {
    this.#rows = Array.from({ length: capacity }, () => undefined);
  }

  add(atMs: number, request: EndedRequest): void {
    const message = request.message;
    this.#rows[this.#written % this.#rows.length] = {
      at: atMs,
      route: request.route,
      disaggRequestId: request.disaggRequestId?.toString(),
      worker: request.worker,
      outcome: request.outcome,
      status: request.status,
      message: message !== undefined && message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS)}…` : message,
    };
    this.#written++;
  }

  newestFirst(): FailureRow[] {
    const rows: FailureRow[] = [];
    for (let n = 1; n <= Math.min(this.#written, this.#rows.length); n++) {
      const row = this.#rows[(this.#written - n) % this.#rows.length];
      if (row !== undefined) rows.push(row);
    }
    return rows;
  }
}
