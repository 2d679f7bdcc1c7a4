import type { ConnectionHome } from "./connection.ts";
import { CONNECTION_EVENTS, WorkerConnection, type ConnectionSlot } from "./connection.ts";

/**
 * Idle connections kept per origin; beyond, a released one is closed. Enough for 64 concurrent
 * clients' legs without reconnecting; more would only hold descriptors, which an open stream
 * needs two of (Bun reports a connect that finds none left as ECONNREFUSED).
 */
const MAX_IDLE = 64;
/**
 * Connections being opened to one origin at once; later opens wait their turn. A burst of
 * thousands of streams opened at once overflowed a worker's accept queue (refused connections,
 * the worker taken out of rotation); fetch queued them behind its own request cap.
 */
const MAX_OPENING = 64;

/** Where a connection opened for one request goes when its answer is done: it asked the worker to close it. */
const ONE_REQUEST: ConnectionHome = { release: (connection) => connection.destroy() };

/**
 * The keep-alive connections to one worker origin. A worker (uvicorn) closes a kept-alive
 * connection `timeout_keep_alive` after its last answer (5 s in trtllm-serve), and a request
 * written in that instant is lost to a reset: so a connection idle `keepAliveMs` or longer (set
 * below the workers' keep-alive) is never reused, checked at the moment of reuse, and closed by a
 * sweep every `keepAliveMs` so it holds no descriptor.
 */
export class OriginPool implements ConnectionHome {
  readonly #hostname: string;
  readonly #port: number;
  readonly #keepAliveMs: number;
  readonly #maxHeadBytes: number;
  /** Most recently released last: reuse takes the warmest. */
  readonly #idle: WorkerConnection[] = [];
  #sweep: Timer | undefined;
  #opening = 0;
  readonly #waiting: (() => void)[] = [];

  constructor(hostname: string, port: number, keepAliveMs: number, maxHeadBytes: number) {
    this.#hostname = hostname;
    this.#port = port;
    this.#keepAliveMs = keepAliveMs;
    this.#maxHeadBytes = maxHeadBytes;
  }

  /** An idle connection fit for reuse, else undefined (the caller opens one). */
  reusable(): WorkerConnection | undefined {
    const oldest = performance.now() - this.#keepAliveMs;
    for (let connection = this.#idle.pop(); connection !== undefined; connection = this.#idle.pop()) {
      if (!connection.closed && connection.idleSince > oldest) return connection;
      connection.destroy();
    }
    return undefined;
  }

  /**
   * A new connection, opened when fewer than MAX_OPENING are being opened to this origin (for
   * `oneRequest`, closed after its answer, never pooled). Undefined when its call ended while
   * waiting its turn: a call given up on holds no place (a black-holed worker's connects last
   * minutes, and those of calls long timed out would hold its later calls back).
   */
  async open(ended: () => boolean, oneRequest = false): Promise<WorkerConnection | undefined> {
    if (this.#opening >= MAX_OPENING) {
      await new Promise<void>((resolve) => this.#waiting.push(resolve));
      if (ended()) {
        this.#waiting.shift()?.();
        return undefined;
      }
    }
    this.#opening++;
    try {
      const slot: ConnectionSlot = { connection: undefined };
      const socket = await Bun.connect<ConnectionSlot>({
        hostname: this.#hostname,
        port: this.#port,
        data: slot,
        socket: CONNECTION_EVENTS,
      });
      socket.setNoDelay(true);
      return new WorkerConnection(socket, oneRequest ? ONE_REQUEST : this, this.#maxHeadBytes);
    } finally {
      this.#opening--;
      this.#waiting.shift()?.();
    }
  }

  release(connection: WorkerConnection): void {
    if (this.#idle.length >= MAX_IDLE || connection.idleSince <= performance.now() - this.#keepAliveMs) {
      connection.destroy();
      return;
    }
    this.#idle.push(connection);
    if (this.#sweep === undefined) {
      this.#sweep = setInterval(() => this.#closeStale(), this.#keepAliveMs);
      this.#sweep.unref();
    }
  }

  /** Closes every idle connection (the pool is dropped, or the proxy stops). */
  close(): void {
    for (const connection of this.#idle.splice(0)) connection.destroy();
    clearInterval(this.#sweep);
    this.#sweep = undefined;
  }

  #closeStale(): void {
    const oldest = performance.now() - this.#keepAliveMs;
    // Not only a stale front: one idle since a pause may be older than those released before it (connection.ts).
    const fresh = this.#idle.filter((connection) => connection.idleSince > oldest);
    for (const connection of this.#idle) if (connection.idleSince <= oldest) connection.destroy();
    this.#idle.splice(0, this.#idle.length, ...fresh);
    if (this.#idle.length === 0) this.close();
  }
}
