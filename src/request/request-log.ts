import type { ProxyError } from "../errors.ts";
import type { Logger } from "../observability/logger.ts";
import type { ClientFacts } from "./client-address.ts";
import type { RequestSummary } from "./reports.ts";

/** One structured line per finished request (bodies are never logged here). */
export function logRequest(logger: Logger, s: RequestSummary): void {
  const fields = {
    // As text here: a line of plain values is written without a copy (observability/logger.ts).
    disagg_request_id: s.disaggRequestId.toString(),
    engine_request_id: s.engineRequestId.toString(),
    route: s.route,
    stream: s.stream,
    schedule: s.schedule,
    context_worker: s.contextWorker,
    generation_worker: s.generationWorker,
    failed_worker: s.failedWorker,
    placed_by: s.placedBy,
    placement_us: s.placementMs === undefined ? undefined : Math.round(s.placementMs * 1000),
    model: s.model,
    requested_model: s.requestedModel,
    status: s.status,
    outcome: s.outcome,
    error: s.error,
    retries: s.retries,
    ttfb_ms: round(s.ttfbMs),
    ttft_ms: round(s.ttftMs),
    duration_ms: round(s.durationMs),
    bytes_out: s.bytesOut,
    client: s.client?.address,
    user_agent: s.client?.userAgent,
  };
  if (s.outcome === "ok") logger.info("request", fields);
  else if (s.outcome === "internal_error") logger.error("request", { ...fields, cause: s.cause });
  else logger.warn("request", fields);
}

function round(ms: number | undefined): number | undefined {
  return ms === undefined ? undefined : Math.round(ms * 1000) / 1000;
}

/** The log line of a request refused before any worker saw it (validation, draining, …). */
export function logRejection(logger: Logger, route: string, error: ProxyError, client?: ClientFacts): void {
  const from = { client: client?.address, user_agent: client?.userAgent };
  logger.warn("request", { route, status: error.status, outcome: error.outcome, code: error.code, error: error.message, ...from });
}
