import type { FirstRead } from "../bytes.ts";
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
}

/** How a request ended: its status and, unless it succeeded, its error. */
export interface Ending {
  readonly status: number;
  readonly error: ProxyError | undefined;
}

/**
 * A client answer and when the request is over: at once for a JSON answer, when the relay
 * closed for a stream. The route ends the request context once, from `ended`.
 */
export interface Answer {
  readonly response: Response;
  readonly ended: Promise<Ending>;
}

/** Time for the relay's one timer: the runtime's, or a test's hand-moved clock. */
export interface StreamClock {
  now(): number;
  /** Calls `fire` after `ms`; the returned function cancels it. */
  setTimer(ms: number, fire: () => void): () => void;
}

export const RUNTIME_CLOCK: StreamClock = {
  now: () => performance.now(),
  setTimer(ms, fire) {
    const timer = setTimeout(fire, ms);
    return () => clearTimeout(timer);
  },
};

export interface EarlyStreamRequest {
  readonly ctx: RequestContext;
  /** The worker's stream (or one replayed for it), once the pipeline has it; or its reader and first read, when the pipeline made that read. */
  readonly upstream: Promise<ReadableStream<Uint8Array> | FirstRead>;
  readonly dialect: DialectStream;
  readonly timings: StreamTimings;
  readonly headers: () => Headers;
  /** A failure before the response opened, in the route's dialect (its HTTP status kept). */
  readonly errorResponse: (error: ProxyError) => Response;
  /** Default: the runtime's clock. */
  readonly clock?: StreamClock;
  /** Runs as the stream closes, while the response is still being written (idle timeout restore). */
  readonly beforeClose?: () => void;
}
