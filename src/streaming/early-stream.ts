import { asProxyError, ProxyError } from "../errors.ts";
import type { PipelineOutcome } from "../pipeline/types.ts";
import type { RequestContext } from "../request/context.ts";
import { ClientRelay, readerOf, type FirstRead } from "./client-relay.ts";
import type { DialectStream } from "./dialect.ts";
import { settleWithin } from "../timers.ts";

export interface StreamTimings {
  /** How long the pipeline may take before the response opens anyway. */
  readonly startWaitMs: number;
  /** A keepalive goes out after this much client-visible silence. */
  readonly keepaliveIntervalMs: number;
  /** The generation stream fails after this much upstream silence. */
  readonly silenceTimeoutMs: number;
}

export interface EarlyStreamRequest {
  readonly ctx: RequestContext;
  readonly outcome: Promise<PipelineOutcome>;
  readonly dialect: DialectStream;
  readonly timings: StreamTimings;
  readonly headers: () => Headers;
  /** A failure before the response opened, in the route's dialect (its HTTP status kept). */
  readonly errorResponse: (error: ProxyError) => Response;
}


/**
 * The one streaming mechanism. Waits up to the start wait for the pipeline's first chunk:
 * answered in time → reply as the worker would (a failure keeps its HTTP status); still
 * running → 200 at once, the dialect's opening, keepalives on every silence, the relay when
 * it comes, and a late failure in-band.
 */
export async function respondWithStream(request: EarlyStreamRequest): Promise<Response> {
  let upstreamStarted = false;
  const first = request.outcome.then(async (outcome): Promise<FirstRead> => {
    if (outcome.kind !== "stream") throw new ProxyError("INTERNAL", 500, "Internal server error");
    upstreamStarted = true;
    const reader = readerOf(outcome.body);
    return { reader, read: await reader.read() };
  });
  const settled = await settleWithin(first, request.timings.startWaitMs);
  if (settled === "rejected") {
    const error = await first.then(() => new ProxyError("INTERNAL", 500, "Internal server error"), asProxyError);
    request.ctx.end(error.status, error);
    return request.errorResponse(error);
  }
  const relay = new ClientRelay(request, first, settled === "pending", () => upstreamStarted);
  return new Response(relay.readable, { status: 200, headers: request.headers() });
}
