import type { ByteReader, FirstRead } from "../bytes.ts";
import { asProxyError, ProxyError } from "../errors.ts";
import { settleWithin } from "../timers.ts";
import { ClientRelay } from "./client-relay.ts";
import type { Answer, EarlyStreamRequest } from "./stream-request.ts";

/**
 * The one streaming mechanism, whose first state is the start wait: up to the start wait for
 * the pipeline's first chunk. Answered in time → reply as the worker would (a failure keeps
 * its HTTP status); still running → 200 at once, the dialect's opening, keepalives on every
 * silence, the relay when it comes, and a late failure in-band. Never ends the request itself:
 * `ended` says when.
 */
export async function respondWithStream(request: EarlyStreamRequest): Promise<Answer> {
  const first = firstReadOf(request.upstream);
  const timings = request.timings;
  const settled = await settleWithin(first, timings.startWaitMs, timings.clock);
  if (settled === "rejected") {
    const error = await first.then(() => new ProxyError("INTERNAL", 500, "Internal server error"), asProxyError);
    const inBand = request.dialect.refusal?.(error);
    if (inBand !== undefined) return refusedInBand(request, inBand, error);
    return { response: request.errorResponse(error), ended: Promise.resolve({ status: error.status, error }) };
  }
  const relay = new ClientRelay(request, first, settled === "pending");
  return { response: new Response(relay.readable, { status: 200, headers: request.headers(request.ctx) }), ended: relay };
}

/** A failure the dialect states in a whole 200 stream of its own (the request still failed). */
function refusedInBand(request: EarlyStreamRequest, bytes: Uint8Array, error: ProxyError): Answer {
  request.ctx.markFirstByte();
  request.ctx.sent(bytes.byteLength);
  request.ctx.traced?.capture.streamed(bytes);
  request.idle?.restore();
  const response = new Response(bytes, { status: 200, headers: request.headers(request.ctx) });
  return { response, ended: Promise.resolve({ status: 200, error }) };
}

/** The worker stream's first read. Made apart from the async function above, whose frame the relay must not keep. */
function firstReadOf(upstream: EarlyStreamRequest["upstream"]): Promise<FirstRead> {
  return upstream.then(firstRead);
}

/** A module function, not an arrow made per stream. */
async function firstRead(body: ReadableStream<Uint8Array> | FirstRead): Promise<FirstRead> {
  if (!(body instanceof ReadableStream)) return body;
  // The runtime's own reader: a wrapper would cost a promise and an object per chunk.
  const reader: ByteReader = body.getReader();
  // The worker answered 200: a stream that breaks before its first byte fails in-band, as
  // later (a 502 WORKER_STREAM_BROKEN), never as the proxy's own 500.
  try {
    return { reader, read: await reader.read() };
  } catch (failure) {
    return { reader, failure };
  }
}
