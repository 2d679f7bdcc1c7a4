/** Many long-lived streams, each on its own connection, opened in batches and held until closed. */

import { HttpConnection } from "../http/connection.ts";
import { exchange, postRequest } from "../http/exchange.ts";
import type { Endpoint, Workload } from "./paths.ts";

interface Held {
  readonly conn: HttpConnection;
  status: number;
  frames: number;
  ended: boolean;
}

/** Connections opened at once: a burst of SYNs larger than the listen backlog would be dropped and retried. */
const BATCH = 250;

export class OpenStreams {
  readonly #endpoint: Endpoint;
  readonly #request: Uint8Array;
  readonly #held: Held[] = [];
  #failures = 0;

  constructor(endpoint: Endpoint, workload: Workload) {
    this.#endpoint = endpoint;
    this.#request = postRequest(endpoint.host, workload.route, JSON.stringify(workload.body));
  }

  get count(): number {
    return this.#held.length;
  }

  /** Streams that failed to connect or broke while held. */
  get failures(): number {
    return this.#failures;
  }

  /** Opens streams until `total` are held. */
  async growTo(total: number): Promise<void> {
    while (this.#held.length < total) {
      const batch = Math.min(BATCH, total - this.#held.length);
      await Promise.all(Array.from({ length: batch }, () => this.#openOne()));
    }
  }

  /** Streams that got a 200 and at least `frames` SSE frames. */
  countWith(frames: number): number {
    return this.#held.filter((held) => held.status === 200 && held.frames >= frames && !held.ended).length;
  }

  /** Polls until every held stream has `frames` frames, or the timeout passes; returns how many do. */
  async waitFor(frames: number, timeoutMs: number): Promise<number> {
    const deadline = performance.now() + timeoutMs;
    while (performance.now() < deadline && this.countWith(frames) < this.#held.length) await Bun.sleep(100);
    return this.countWith(frames);
  }

  minFrames(): number {
    return this.#held.reduce((min, held) => Math.min(min, held.frames), Number.POSITIVE_INFINITY);
  }

  /** Drops every connection at once, as clients that all leave. */
  closeAll(): void {
    for (const held of this.#held) held.conn.abort();
    this.#held.length = 0;
  }

  async #openOne(): Promise<void> {
    let conn: HttpConnection;
    try {
      conn = await HttpConnection.open(this.#endpoint.hostname, this.#endpoint.port);
    } catch {
      this.#failures++;
      return;
    }
    const held: Held = { conn, status: 0, frames: 0, ended: false };
    this.#held.push(held);
    exchange(conn, this.#request, {
      onHead: (status) => {
        held.status = status;
      },
      onBody: (frames) => {
        held.frames = frames;
      },
    }).then(
      () => {
        held.ended = true;
        return undefined;
      },
      () => {
        held.ended = true;
        if (this.#held.includes(held)) this.#failures++;
      },
    );
  }
}
