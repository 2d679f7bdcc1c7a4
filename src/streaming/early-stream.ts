import { asProxyError, ProxyError } from "../errors.ts";
import { settleWithin } from "../timers.ts";
import { ClientRelay, readerOf, type FirstRead } from "./client-relay.ts";
import type { Answer, EarlyStreamRequest } from "./stream-request.ts";

/**
 * The one streaming mechanism. Waits up to the start wait for the pipeline's first chunk:
 * answered in time → reply as the worker would (a failure keeps its HTTP status); still
 * running → 200 at once, the dialect's opening, keepalives on every silence, the relay when
 * it comes, and a late failure in-band. Never ends the request itself: `ended` says when.
 */
export async function respondWithStream(request: EarlyStreamRequest): Promise<Answer> {
  const { first, started } = firstReadOf(request.upstream);
  const settled = await settleWithin(first, request.timings.startWaitMs);
  if (settled === "rejected") {
    const error = await first.then(() => new ProxyError("INTERNAL", 500, "Internal server error"), asProxyError);
    const inBand = request.dialect.refusal?.(error);
    if (inBand !== undefined) return refusedInBand(request, inBand, error);
    return { response: request.errorResponse(error), ended: Promise.resolve({ status: error.status, error }) };
  }
  const relay = new ClientRelay(request, first, settled === "pending", started);
  return { response: new Response(relay.readable, { status: 200, headers: request.headers() }), ended: relay.ended };
}

/** A failure the dialect states in a whole 200 stream of its own (the request still failed). */
function refusedInBand(request: EarlyStreamRequest, bytes: Uint8Array, error: ProxyError): Answer {
  request.ctx.markFirstByte();
  request.ctx.sent(bytes.byteLength);
  request.ctx.traced?.capture.streamed(bytes);
  request.beforeClose?.();
  const response = new Response(bytes, { status: 200, headers: request.headers() });
  return { response, ended: Promise.resolve({ status: 200, error }) };
}

/**
 * The worker stream's first read, and whether the stream has come yet. Made apart from the
 * async function above so the relay, which keeps `started`, keeps nothing else of its frame.
 */
function firstReadOf(upstream: EarlyStreamRequest["upstream"]): { first: Promise<FirstRead>; started: () => boolean } {
  let upstreamStarted = false;
  const first = upstream.then(async (body): Promise<FirstRead> => {
    upstreamStarted = true;
    if (!(body instanceof ReadableStream)) return body;
    const reader = readerOf(body);
    // The worker answered 200: a stream that breaks before its first byte fails in-band, as
    // later (a 502 WORKER_STREAM_BROKEN), never as the proxy's own 500.
    try {
      return { reader, read: await reader.read() };
    } catch (failure) {
      return { reader, failure };
    }
  });
  return { first, started: () => upstreamStarted };
}
