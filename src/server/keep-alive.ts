/**
 * server_keep_alive_timeout on Bun.serve: an idle keep-alive connection stays open at least the
 * configured N (a gateway's idle pool outliving the proxy's bound meets resets;
 * NVIDIA/TensorRT-LLM#16430). Two mechanisms: the runtime's socket timer (4-second ticks, at most
 * 255 s, so one tick more than N is asked for) and, once nothing has been in flight for N, a sweep
 * that closes every idle connection. Measured on Bun 1.4.5: docs/security.md#idle-connections.
 */

import type { Connection, IdleBound } from "../routes/deps.ts";

const TICK_S = 4;
/** The most the runtime's timer takes (Bun.serve idleTimeout, server.timeout). */
const RUNTIME_MAX_S = 255;

export interface KeepAliveBound {
  /** Runtime seconds to set on a connection once its answer is written; 0 = the runtime never closes it. */
  readonly runtimeS: number;
  /** Runtime seconds for a new connection to send its first request (slowloris bound): never 0. */
  readonly firstRequestS: number;
  /** Seconds without an answer ending after which the sweep closes the idle connections; undefined: no sweep. */
  readonly quietCloseS: number | undefined;
}

/** `overrideS`: the idle bound in the runtime's own seconds, for tests that shorten it (no sweep). */
export function keepAliveBound(seconds: number, overrideS?: number): KeepAliveBound {
  if (overrideS !== undefined) return { runtimeS: overrideS, firstRequestS: overrideS, quietCloseS: undefined };
  const ticks = Math.ceil(seconds / TICK_S) + 1;
  // 255 is still 64 ticks (it closed at 256 s).
  if (ticks <= Math.ceil(RUNTIME_MAX_S / TICK_S)) {
    const runtimeS = Math.min(ticks * TICK_S, RUNTIME_MAX_S);
    return { runtimeS, firstRequestS: runtimeS, quietCloseS: seconds };
  }
  return { runtimeS: 0, firstRequestS: RUNTIME_MAX_S, quietCloseS: seconds };
}

/** What a request's connection facts use of the server it came to. */
export type ConnectionHost = Pick<Bun.Server<undefined>, "timeout" | "requestIP">;

/** A request's connection as the front door holds it: the route's facts, and the bound put back if a route lifted it and failed. */
export interface HeldConnection extends Connection {
  restoreIfLifted(): void;
}

/** One server's idle bound, set on each request's connection, and the latest request's start, which the quiet sweep reads. */
export class KeepAlive {
  readonly bound: KeepAliveBound;
  #lastRequestAt = 0;
  #closing = false;

  constructor(bound: KeepAliveBound) {
    this.bound = bound;
  }

  /** Once true, every answer says `Connection: close` (an upgrade moves kept-alive clients to new connections). */
  get closing(): boolean {
    return this.#closing;
  }

  /** From now on every answer closes its connection after it. */
  closeConnections(): void {
    this.#closing = true;
  }

  /** performance.now() at the latest request's start. */
  get lastRequestAt(): number {
    return this.#lastRequestAt;
  }

  /**
   * The connection's bound once this answer is written (only a call made before then counts;
   * the server's idleTimeout already is that bound unless they differ, above 252 s). A lifted
   * timeout stays on the connection for every later idle period unless put back (oven-sh/bun
   * PR #33611, closed unmerged; measured on Bun 1.4.5).
   */
  connectionOf(request: Request, server: ConnectionHost): HeldConnection {
    this.#lastRequestAt = performance.now();
    const { runtimeS, firstRequestS } = this.bound;
    if (runtimeS !== firstRequestS) server.timeout(request, runtimeS);
    return new RequestConnection(request, server, runtimeS);
  }
}

/** One request's connection: one object with methods, which a stream holds until it closes (closures and their scopes cost more). */
class RequestConnection implements HeldConnection, IdleBound {
  readonly #request: Request;
  readonly #server: ConnectionHost;
  readonly #runtimeS: number;
  #lifted = false;

  constructor(request: Request, server: ConnectionHost, runtimeS: number) {
    this.#request = request;
    this.#server = server;
    this.#runtimeS = runtimeS;
  }

  keepOpen(): IdleBound {
    if (!this.#lifted) {
      this.#server.timeout(this.#request, 0);
      this.#lifted = true;
    }
    return this;
  }

  restore(): void {
    this.#server.timeout(this.#request, this.#runtimeS);
  }

  peer(): string | undefined {
    return this.#server.requestIP(this.#request)?.address;
  }

  restoreIfLifted(): void {
    if (this.#lifted) this.restore();
  }
}

/** What the sweep uses of the server: requests in flight, whether it still listens, the closing of idle connections. */
export interface SweptServer {
  /** Requests whose answer is not fully written yet. */
  readonly pendingRequests: number;
  /** 0 once stopped (measured on Bun 1.4.5): the sweep then ends. */
  readonly port: number | undefined;
  closeIdleConnections(): number;
}

const SWEEP_EVERY_MS = 250;

/**
 * Closes the idle connections once nothing has been in flight for `quietS`. In-flight work is
 * sampled every sweep, and `lastRequestAt` (performance.now() time of the latest request start)
 * covers a request that began and ended between two samples; one sweep interval more makes up
 * for sampling, so no connection is closed having been idle less than `quietS`. Once per quiet
 * spell: a connection only becomes idle as an answer ends.
 */
export function startQuietSweep(server: SweptServer, quietS: number, lastRequestAt: () => number): void {
  let lastBusy = performance.now();
  let sweptAt = Number.NEGATIVE_INFINITY;
  const timer = setInterval(() => {
    if (server.port === 0) {
      clearInterval(timer);
      return;
    }
    const now = performance.now();
    if (server.pendingRequests > 0) lastBusy = now;
    const busy = Math.max(lastBusy, lastRequestAt());
    if (sweptAt >= busy || now - busy < quietS * 1000 + SWEEP_EVERY_MS) return;
    sweptAt = now;
    server.closeIdleConnections();
  }, SWEEP_EVERY_MS);
  timer.unref();
}
