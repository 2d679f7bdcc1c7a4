import type { ProxyConfig } from "../config/types.ts";
import { ProxyError } from "../errors.ts";
import type { Logger } from "../observability/logger.ts";
import type { PipelineDeps } from "../pipeline/types.ts";
import { RequestContext, type RequestSummary } from "../request/context.ts";
import { DisaggIdAllocator } from "../request/disagg-id.ts";
import { Placement } from "../routing/placement.ts";
import type { StreamTimings } from "../streaming/early-stream.ts";
import { logRequest } from "./request-log.ts";

/** Seconds a refused client is told to wait before trying again (draining, overload). */
export const RETRY_AFTER_S = 5;

/** Everything a route needs, built once per server and passed in (no module state). */
export interface App extends PipelineDeps {
  readonly timings: StreamTimings;
  readonly version: string;
  /** Requests between validation and their end. */
  readonly active: ReadonlySet<RequestContext>;
  readonly draining: boolean;
  /** Starts the one context of a client request that passed validation (refused while draining). */
  newContext(route: string, stream: boolean): RequestContext;
  /** From now on new requests are refused with 503 and Retry-After. */
  startDraining(): void;
}

export function createApp(config: ProxyConfig, logger: Logger, version: string): App {
  const placement = new Placement(config);
  const ids = new DisaggIdAllocator(config.nodeId);
  const active = new Set<RequestContext>();
  let draining = false;
  const onEnd = (ctx: RequestContext, summary: RequestSummary): void => {
    active.delete(ctx);
    logRequest(logger, summary);
  };
  return {
    config,
    placement,
    ids,
    logger,
    version,
    active,
    get draining() {
      return draining;
    },
    timings: {
      startWaitMs: config.streamStartWaitMs,
      keepaliveIntervalMs: config.keepaliveIntervalMs,
      silenceTimeoutMs: config.requestTimeoutMs,
    },
    startDraining() {
      draining = true;
    },
    newContext(route, stream) {
      if (draining) throw new ProxyError("DRAINING", 503, "The proxy is shutting down; retry on another replica");
      const ctx: RequestContext = new RequestContext({
        disaggRequestId: ids.next(),
        route,
        stream,
        schedule: config.schedule,
        onEnd: (summary) => onEnd(ctx, summary),
      });
      active.add(ctx);
      return ctx;
    },
  };
}
