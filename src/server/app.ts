import type { ProxyConfig } from "../config/types.ts";
import type { Logger } from "../observability/logger.ts";
import type { PipelineDeps } from "../pipeline/types.ts";
import { RequestContext, type RequestSummary } from "../request/context.ts";
import { DisaggIdAllocator } from "../request/disagg-id.ts";
import { Placement } from "../routing/placement.ts";
import type { StreamTimings } from "../streaming/early-stream.ts";

/** Everything a route needs, built once per server and passed in (no module state). */
export interface App extends PipelineDeps {
  readonly timings: StreamTimings;
  readonly version: string;
  /** Starts the one context of a client request that passed validation. */
  newContext(route: string, stream: boolean): RequestContext;
}

export function createApp(config: ProxyConfig, logger: Logger, version: string): App {
  const placement = new Placement(config);
  const ids = new DisaggIdAllocator(config.nodeId);
  const onEnd = (summary: RequestSummary): void => logRequest(logger, summary);
  return {
    config,
    placement,
    ids,
    logger,
    version,
    timings: {
      startWaitMs: config.streamStartWaitMs,
      keepaliveIntervalMs: config.keepaliveIntervalMs,
      silenceTimeoutMs: config.requestTimeoutMs,
    },
    newContext: (route, stream) =>
      new RequestContext({ disaggRequestId: ids.next(), route, stream, schedule: config.schedule, onEnd }),
  };
}

/** One structured line per finished request. */
function logRequest(logger: Logger, s: RequestSummary): void {
  const fields = {
    disagg_request_id: s.disaggRequestId,
    engine_request_id: s.engineRequestId,
    route: s.route,
    stream: s.stream,
    schedule: s.schedule,
    context_worker: s.contextWorker,
    generation_worker: s.generationWorker,
    status: s.status,
    outcome: s.outcome,
    error: s.error,
    retries: s.retries,
    ttfb_ms: round(s.ttfbMs),
    ttft_ms: round(s.ttftMs),
    duration_ms: round(s.durationMs),
    bytes_out: s.bytesOut,
  };
  if (s.outcome === "ok") logger.info("request", fields);
  else logger.warn("request", fields);
}

function round(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.round(ms * 1000) / 1000;
}
