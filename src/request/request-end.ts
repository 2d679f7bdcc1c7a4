import type { ProxyError } from "../errors.ts";
import type { Logger } from "../observability/logger.ts";
import type { ProxyMetrics } from "../observability/metrics.ts";
import type { TrafficObserver } from "../observability/traffic-observer.ts";
import type { ClientFacts } from "./client-address.ts";
import type { RequestSummary } from "./reports.ts";
import { logRejection, logRequest } from "./request-log.ts";

/**
 * Where every client request is counted and logged when it ends: a request context's one end,
 * and a request refused before it had a context (validation, auth, draining, overload).
 */
export interface RequestEnds {
  finished(summary: RequestSummary): void;
  /** `label` is the metrics' route label; `thrown` what was caught, for an internal failure's error line. */
  rejected(label: string, path: string, error: ProxyError, thrown: unknown, client?: ClientFacts): void;
}

/** `traffic` (the dashboard) hears every end the metrics count. */
export function requestEnds(metrics: ProxyMetrics, logger: Logger, traffic?: TrafficObserver): RequestEnds {
  return {
    finished(summary) {
      metrics.requestEnded(summary.route, summary.outcome, summary.status);
      if (summary.outcome === "ok")
        metrics.requestLatency(summary.route, summary.durationMs / 1000, summary.ttftMs === undefined ? undefined : summary.ttftMs / 1000);
      if (summary.outcome === "client_disconnected") metrics.clientDisconnected(summary.route);
      logRequest(logger, summary);
      traffic?.requestEnded({
        route: summary.route,
        outcome: summary.outcome,
        status: summary.status,
        disaggRequestId: summary.disaggRequestId,
        worker: (summary.outcome === "ok" ? undefined : summary.failedWorker) ?? summary.generationWorker ?? summary.contextWorker,
        message: summary.error,
        code: summary.errorCode,
        ttftMs: summary.ttftMs,
        durationMs: summary.durationMs,
      });
    },
    rejected(label, path, error, thrown, client) {
      metrics.validationFailed(label);
      metrics.requestEnded(label, error.outcome, error.status);
      traffic?.requestEnded({
        route: label,
        outcome: error.outcome,
        status: error.status,
        disaggRequestId: undefined,
        worker: undefined,
        message: error.message,
        code: error.code,
        ttftMs: undefined,
        durationMs: undefined,
      });
      if (error.code === "INTERNAL") logger.error("unexpected failure", { path, error: thrown });
      else logRejection(logger, path, error, client);
    },
  };
}
