/**
 * W3C Trace Context (traceparent / tracestate): a request keeps the client's trace id, or
 * starts a trace. The proxy's own span for the request (exported as `disaggregated_request`)
 * is the client's span's child; every upstream leg attempt is a new span under it.
 */

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);

export type RandomHex = (bytes: number) => string;

export interface TraceContext {
  readonly traceId: string;
  /** The client's span, when the client sent a valid traceparent; undefined when we started the trace. */
  readonly clientSpanId: string | undefined;
  /** The proxy's span for the request: the parent of every leg attempt's span. */
  readonly serverSpanId: string;
  readonly flags: string;
  readonly tracestate: string | undefined;
}

export function traceFrom(headers: Headers, randomHex: RandomHex = randomHexBytes): TraceContext {
  const traceparent = headers.get("traceparent");
  // Most clients send none: a trace is started without a match to try.
  if (traceparent === null) return startedTrace(randomHex);
  const match = TRACEPARENT.exec(traceparent.trim().toLowerCase());
  const [, version, traceId, spanId, flags] = match ?? [];
  const valid = version !== undefined && version !== "ff" && traceId !== ZERO_TRACE && spanId !== ZERO_SPAN;
  if (valid && traceId !== undefined && spanId !== undefined && flags !== undefined) {
    return { traceId, clientSpanId: spanId, serverSpanId: randomHex(8), flags, tracestate: headers.get("tracestate") ?? undefined };
  }
  return startedTrace(randomHex);
}

/** A trace the proxy starts (the client sent none, or none valid): sampled. */
function startedTrace(randomHex: RandomHex): TraceContext {
  return { traceId: randomHex(16), clientSpanId: undefined, serverSpanId: randomHex(8), flags: "01", tracestate: undefined };
}

/** The trace is sampled (flags bit 0): only then are its spans recorded and exported. */
export function sampled(trace: TraceContext): boolean {
  return (Number.parseInt(trace.flags, 16) & 1) === 1;
}

/** Headers for one leg attempt, set in `headers`: the same trace, the attempt's own span id. */
export function setLegTraceHeaders(headers: Record<string, string>, trace: TraceContext, spanId: string): Record<string, string> {
  headers["traceparent"] = `00-${trace.traceId}-${spanId}-${trace.flags}`;
  if (trace.tracestate !== undefined) headers["tracestate"] = trace.tracestate;
  return headers;
}

export function randomHexBytes(bytes: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");
}

/** Random bytes drawn per refill: one system call and one hex conversion per ~256 span ids. */
const POOL_BYTES = 4096;

/** Random ids cut from a pool of random hex text, refilled 4 KiB of random bytes at a time. */
export class RandomIds {
  #pool = "";
  #next = 0;

  readonly hex: RandomHex = (bytes) => {
    const chars = bytes * 2;
    if (this.#next + chars > this.#pool.length) {
      this.#pool = Buffer.from(crypto.getRandomValues(new Uint8Array(Math.max(POOL_BYTES, bytes)))).toString("hex");
      this.#next = 0;
    }
    const id = this.#pool.slice(this.#next, this.#next + chars);
    this.#next += chars;
    return id;
  };
}
