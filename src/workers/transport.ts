import { readFileSync } from "node:fs";
import type { CallTimeout } from "./http1/exchange.ts";
import type { RawInit } from "./http1/connection.ts";
import type { StreamAnswer } from "./http1/stream-exchange.ts";
import type { WholeAnswer, WholeOptions } from "./http1/whole-exchange.ts";
import { createRawFetch } from "./http1/raw-fetch.ts";

/** fetch as every call to a worker makes it: the worker CA and the worker API key applied. */
export interface WorkerFetch {
  (url: string, init?: BunFetchRequestInit): Promise<Response>;
  /**
   * A whole answer read with no Response (http1/whole-exchange.ts), where the transport can: the
   * proxy's own client, for http: workers. Undefined for a URL it does not serve that way.
   */
  readonly whole?: (url: string, init: RawInit, options: WholeOptions) => Promise<WholeAnswer> | undefined;
  /** A streamed answer whose body is read straight from the socket (http1/stream-exchange.ts); undefined as `whole`. */
  readonly stream?: (url: string, init: RawInit, timeout: CallTimeout) => Promise<StreamAnswer> | undefined;
}

/** The transport's settings, named as ProxyConfig names them (the whole config fits). */
export interface WorkerTransportSettings {
  /** PEM bundle trusted for https:// workers, in addition to the system's (--worker-ca-file). @default undefined: the system's only */
  readonly workerCaFile?: string | undefined;
  /** Sent as `Authorization: Bearer` to workers, never the client's own key (--worker-api-key). @default undefined: none */
  readonly workerApiKey?: string | undefined;
  /** A pooled connection idle this long is never reused (--worker-keep-alive-s). @default 4000 */
  readonly workerKeepAliveMs?: number | undefined;
}

const DEFAULT_KEEP_ALIVE_MS = 4000;
/** Origins with a pool of their own; beyond, the longest unused one is closed (workers come and go). */
const MAX_POOLS = 1024;

export function createWorkerFetch(settings: WorkerTransportSettings, readFile = (path: string) => readFileSync(path, "utf8")): WorkerFetch {
  const ca = settings.workerCaFile === undefined ? undefined : readFile(settings.workerCaFile);
  const authorization = settings.workerApiKey === undefined ? undefined : `Bearer ${settings.workerApiKey}`;
  const keepAliveMs = settings.workerKeepAliveMs ?? DEFAULT_KEEP_ALIVE_MS;
  // Plain-HTTP workers (the usual fleet) on the proxy's own HTTP/1.1 client; https: ones on fetch,
  // whose certificate checks (the system's CAs and --worker-ca-file together) stay as they are.
  const raw = createRawFetch({ keepAliveMs });
  const pools = new OriginPools(keepAliveMs, ca);
  const authorised = <I extends RawInit>(init: I): I => {
    if (authorization === undefined) return init;
    const headers = new Headers(init.headers);
    headers.set("authorization", authorization);
    return { ...init, headers };
  };
  const send = (url: string, init: BunFetchRequestInit = {}): Promise<Response> =>
    plain(url) ? raw.fetch(url, authorised(init)) : pools.sessionFor(url).fetch(url, authorised(init));
  return Object.assign(send, {
    whole: (url: string, init: RawInit, options: WholeOptions) => (plain(url) ? raw.whole(url, authorised(init), options) : undefined),
    stream: (url: string, init: RawInit, timeout: CallTimeout) => (plain(url) ? raw.stream(url, authorised(init), timeout) : undefined),
  });
}

/**
 * Idle expiry of pooled worker connections. A worker (uvicorn) closes a kept-alive connection
 * `timeout_keep_alive` after its last response (5 s in trtllm-serve); a proxy that reuses it in
 * that instant loses the request to a reset. So no connection is reused once it may have been
 * idle `keepAliveMs`, set below the workers' keep-alive.
 *
 * Bun's fetch keeps idle sockets 5 minutes, and its own `idleTimeout` moves in 4 s steps (a 1 s
 * setting closed sockets after 8.0 s idle, measured; BUN_CONFIG_HTTP_IDLE_TIMEOUT=1 and 4 closed
 * none within 14 s), so it cannot expire a socket before 5 s. Each origin has a FetchSession of
 * its own instead, and the first request to an origin `keepAliveMs` or more after its last sweep
 * sweeps it first (`close()`: every idle socket closed). A socket reused at time t was then
 * either idle at the last sweep s (and closed), or released after s: idle less than t − s <
 * keepAliveMs. What this costs: at most one reconnect per pooled socket per `keepAliveMs`.
 */
class OriginPools {
  readonly #pools = new Map<string, { readonly session: Bun.FetchSession; sweptAt: number }>();
  readonly #keepAliveMs: number;
  readonly #ca: string | undefined;

  constructor(keepAliveMs: number, ca: string | undefined) {
    this.#keepAliveMs = keepAliveMs;
    this.#ca = ca;
  }

  sessionFor(url: string): Bun.FetchSession {
    const origin = originOf(url);
    const now = performance.now();
    const pool = this.#pools.get(origin);
    if (pool === undefined) return this.#open(origin, now);
    // Kept in use order: the first entry is the least recently used.
    this.#pools.delete(origin);
    this.#pools.set(origin, pool);
    if (now - pool.sweptAt >= this.#keepAliveMs) {
      pool.session.close();
      pool.sweptAt = now;
    }
    return pool.session;
  }

  #open(origin: string, now: number): Bun.FetchSession {
    if (this.#pools.size >= MAX_POOLS) {
      const [oldest, pool] = this.#pools.entries().next().value ?? [];
      if (oldest !== undefined) this.#pools.delete(oldest);
      pool?.session.close();
    }
    // Bun's own idle timer as a backstop (it rounds up to its 4 s steps); the sweep is the bound.
    const keepAlive = { idleTimeout: Math.max(1, Math.ceil(this.#keepAliveMs / 1000)) };
    const session = new Bun.FetchSession(this.#ca === undefined ? { keepAlive } : { keepAlive, tls: { ca: this.#ca } });
    this.#pools.set(origin, { session, sweptAt: now });
    return session;
  }
}

/** A plain-HTTP worker URL, which the proxy's own client serves. */
function plain(url: string): boolean {
  return url.startsWith("http:");
}

/** `scheme://host:port` of a worker URL, without parsing it whole (this runs on every call). */
function originOf(url: string): string {
  const slash = url.indexOf("/", url.indexOf("://") + 3);
  return slash < 0 ? url : url.slice(0, slash);
}
