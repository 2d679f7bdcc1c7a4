import type { FirstRead } from "../bytes.ts";
import type { DeadlineTarget, DeadlineWheel } from "../deadline-wheel.ts";
import type { ProxyError } from "../errors.ts";
import type { RequestContext } from "../request/context.ts";
import type { DialectStream } from "./dialect.ts";

export interface StreamTimings {
  /** How long the pipeline may take before the response opens anyway. */
  readonly startWaitMs: number;
  /** A keepalive goes out after this much client-visible silence. */
  readonly keepaliveIntervalMs: number;
  /** The generation stream fails after this much upstream silence. */
  readonly silenceTimeoutMs: number;
  /** What the keepalive and silence deadlines run on (the server's one wheel); default a timer per stream. */
  readonly clock?: StreamClock;
}

/** How a request ended: its status and, unless it succeeded, its error. */
export interface Ending {
  readonly status: number;
  readonly error: ProxyError | undefined;
}

/** Told once how a request ended (the route's watch, which ends its context). */
export interface EndingListener {
  requestEnded(ending: Ending): void;
}

/**
 * A stream's relay, which tells one listener how the request ended, in a microtask after it
 * closed (as a promise's reaction would): an open stream then holds no promise, resolver,
 * reactions nor their closures for it.
 */
export interface EndingSource {
  whenEnded(listener: EndingListener): void;
}

/**
 * A client answer and when the request is over: at once for a JSON answer, when the relay
 * closed for a stream. The route ends the request context once, from `ended`.
 */
export interface Answer {
  readonly response: Response;
  readonly ended: Promise<Ending> | EndingSource;
}

/** Time for the relay's deadline: the runtime's, a shared wheel, or a test's hand-moved clock. */
export interface StreamClock {
  now(): number;
  /** Calls `fire` after `ms`; the returned function cancels it (the start wait's). */
  setTimer(ms: number, fire: () => void): () => void;
  /** Tells `target` after `ms`; returns what `disarm` takes to cancel it (a relay's deadline: no closure held per stream). */
  arm(ms: number, target: DeadlineTarget): unknown;
  disarm(armed: unknown, target: DeadlineTarget): void;
}

export const RUNTIME_CLOCK: StreamClock = {
  now: () => performance.now(),
  setTimer(ms, fire) {
    const timer = setTimeout(fire, ms);
    return () => clearTimeout(timer);
  },
  arm(ms, target) {
    const timer = setTimeout(() => target.deadlinePassed(), ms);
    return () => clearTimeout(timer);
  },
  disarm: (armed) => {
    if (typeof armed === "function") armed();
  },
};

/**
 * Every stream's deadlines on one wheel, filed as the relay itself: a timer of its own per
 * stream cost a native Timeout, and a closure per deadline its callback, canceller and scopes,
 * for as long as the stream stayed open.
 */
export function wheelClock(deadlines: DeadlineWheel): StreamClock {
  return {
    now: () => performance.now(),
    setTimer: (ms, fire) => deadlines.schedule(ms, fire),
    arm: (ms, target) => deadlines.file(ms, target),
    disarm: (armed, target) => {
      if (typeof armed === "number") deadlines.unfile(armed, target);
    },
  };
}

export interface EarlyStreamRequest {
  readonly ctx: RequestContext;
  /** The worker's stream (or one replayed for it), once the pipeline has it; or its reader and first read, when the pipeline made that read. */
  readonly upstream: Promise<ReadableStream<Uint8Array> | FirstRead>;
  readonly dialect: DialectStream;
  readonly timings: StreamTimings;
  /** The response's headers, made once it opens (the request's reply id may change until then). */
  readonly headers: (ctx: RequestContext) => Headers;
  /** A failure before the response opened, in the route's dialect (its HTTP status kept). */
  readonly errorResponse: (error: ProxyError) => Response;
  /** The server's idle bound, put back as the stream closes, while the response is still being written. */
  readonly idle?: { restore(): void };
}
