/**
 * W3C Trace Context (traceparent / tracestate): a request keeps the client's trace id, or
 * starts a trace; every upstream leg attempt is a new span under it.
 */

const TRACEPARENT = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})$/;
const ZERO_TRACE = "0".repeat(32);
const ZERO_SPAN = "0".repeat(16);

export interface TraceContext {
  readonly traceId: string;
  /** The client's span (or ours when we started the trace). */
  readonly parentSpanId: string;
  readonly flags: string;
  readonly tracestate: string | undefined;
}

export function traceFrom(headers: Headers, randomHex: (bytes: number) => string = randomHexBytes): TraceContext {
  const match = TRACEPARENT.exec(headers.get("traceparent")?.trim().toLowerCase() ?? "");
  const [, version, traceId, spanId, flags] = match ?? [];
  const valid = version !== undefined && version !== "ff" && traceId !== ZERO_TRACE && spanId !== ZERO_SPAN;
  if (valid && traceId !== undefined && spanId !== undefined && flags !== undefined) {
    return { traceId, parentSpanId: spanId, flags, tracestate: headers.get("tracestate") ?? undefined };
  }
  return { traceId: randomHex(16), parentSpanId: randomHex(8), flags: "01", tracestate: undefined };
}

/** Headers for one leg attempt: the same trace, a fresh span id. */
export function legTraceHeaders(trace: TraceContext, randomHex: (bytes: number) => string = randomHexBytes): Record<string, string> {
  const headers: Record<string, string> = { traceparent: `00-${trace.traceId}-${randomHex(8)}-${trace.flags}` };
  if (trace.tracestate !== undefined) headers["tracestate"] = trace.tracestate;
  return headers;
}

function randomHexBytes(bytes: number): string {
  return Buffer.from(crypto.getRandomValues(new Uint8Array(bytes))).toString("hex");
}
