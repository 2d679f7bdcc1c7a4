/**
 * server_keep_alive_timeout on Bun.serve. An idle keep-alive connection must stay open at least
 * the configured time: closing earlier is what the setting exists to prevent (a gateway's idle
 * pool outliving the proxy's bound meets resets; NVIDIA/TensorRT-LLM#16430).
 *
 * The runtime's socket timer moves in 4-second ticks, counted from the moment the timeout is set,
 * and a timeout of t seconds fires on the ceil(t/4)-th tick, i.e. after 4·(ceil(t/4) − 1) to
 * 4·ceil(t/4) seconds of silence; it takes at most 255 s (300 and 1000 both closed at 256 s).
 * All measured on Bun 1.4.5 over loopback. So N is kept by asking for one tick more than N
 * needs: the connection closes between N and N + 8 s of idleness. Beyond what 64 ticks can
 * promise, the runtime's timer is switched off for idle connections and a sweep closes them
 * once the whole server has been quiet for N.
 */

const TICK_S = 4;
/** The most the runtime's timer takes (Bun.serve idleTimeout, server.timeout). */
const RUNTIME_MAX_S = 255;

export interface KeepAliveBound {
  /** Runtime seconds to set on a connection once its answer is written; 0 = the runtime never closes it. */
  readonly runtimeS: number;
  /** Runtime seconds for a new connection to send its first request (slowloris bound): never 0. */
  readonly firstRequestS: number;
  /** When runtimeS is 0: seconds the server must have been quiet before its idle connections are closed. */
  readonly quietCloseS: number | undefined;
}

export function keepAliveBound(seconds: number): KeepAliveBound {
  const ticks = Math.ceil(seconds / TICK_S) + 1;
  // 255 is still 64 ticks (it closed at 256 s).
  if (ticks <= Math.ceil(RUNTIME_MAX_S / TICK_S)) {
    const runtimeS = Math.min(ticks * TICK_S, RUNTIME_MAX_S);
    return { runtimeS, firstRequestS: runtimeS, quietCloseS: undefined };
  }
  return { runtimeS: 0, firstRequestS: RUNTIME_MAX_S, quietCloseS: seconds };
}

/** What the sweep reads of the server: in-flight requests, and whether it still listens. */
export interface SweptServer {
  readonly pendingRequests: number;
  /** 0 once stopped (measured on Bun 1.4.5): the sweep then ends. */
  readonly port: number | undefined;
  closeIdleConnections(): number;
}

const SWEEP_EVERY_MS = 1000;

/**
 * Closes every idle connection once nothing has been in flight for `quietS` (+ one sweep
 * interval, as in-flight work is sampled): every idle connection has then been idle that long,
 * so none is closed early. A server never quiet that long keeps its idle connections open.
 * `touched` is the time of the last request start the listener saw (it starts between samples).
 */
export function startQuietSweep(server: SweptServer, quietS: number, lastRequestAt: () => number): void {
  let lastBusy = performance.now();
  const timer = setInterval(() => {
    if (server.port === 0) {
      clearInterval(timer);
      return;
    }
    const now = performance.now();
    if (server.pendingRequests > 0) lastBusy = now;
    const quietSince = Math.max(lastBusy, lastRequestAt());
    if (now - quietSince >= quietS * 1000 + SWEEP_EVERY_MS) {
      server.closeIdleConnections();
      lastBusy = now;
    }
  }, SWEEP_EVERY_MS);
  timer.unref();
}
