import type { ModelGauges, ProxyMetrics, WorkerGauges } from "../observability/metrics.ts";
import type { TrafficObserver } from "../observability/traffic-observer.ts";
import type { RequestHooks } from "./reports.ts";
import type { Placement } from "../routing/placement.ts";

/**
 * A request's hooks, feeding the metrics under its route and, when there is one, the traffic
 * observer with the same events.
 */
export function metricsHooks(metrics: ProxyMetrics, route: string, traffic?: TrafficObserver): RequestHooks {
  if (traffic === undefined) {
    return {
      legAttempt: (role) => metrics.upstreamAttempt(role),
      legRetry: (role) => metrics.upstreamRetry(role),
      legFailed: (role) => metrics.upstreamError(role),
      legCompleted: (role, first, complete) => metrics.upstreamCompleted(role, first, complete),
      keepaliveSent: () => metrics.keepaliveSent(route),
      streamOpened: () => metrics.streamOpened(),
      streamClosed: () => metrics.streamClosed(),
    };
  }
  return {
    legAttempt(role, origin) {
      metrics.upstreamAttempt(role);
      traffic.legAttempt(role, origin);
    },
    legRetry: (role) => metrics.upstreamRetry(role),
    legFailed(role, origin) {
      metrics.upstreamError(role);
      traffic.legFailed(role, origin);
    },
    legCompleted(role, first, complete, origin) {
      metrics.upstreamCompleted(role, first, complete);
      traffic.legCompleted(role, origin, first, complete);
    },
    keepaliveSent() {
      metrics.keepaliveSent(route);
      traffic.keepaliveSent(route);
    },
    streamOpened() {
      metrics.streamOpened();
      traffic.streamOpened();
    },
    streamClosed() {
      metrics.streamClosed();
      traffic.streamClosed();
    },
  };
}

/** The worker gauges, read at scrape time from the pool and the reservation table. */
export function workerGauges(placement: Placement): WorkerGauges[] {
  return (["context", "generation"] as const).flatMap((role) =>
    placement.pool.all(role).map((worker) => ({
      role,
      url: worker.origin,
      inFlight: placement.table.load(role, worker.origin),
      healthy: worker.ready,
      ejected: worker.outlier?.ejected !== undefined,
      version: worker.protocol.version ?? "unknown",
    })),
  );
}

/** Each served model's ready workers and in-flight requests by role, for the per-model gauges. */
export function modelGauges(placement: Placement): ModelGauges[] {
  return placement.modelStatus().flatMap((status) =>
    (["context", "generation"] as const).map((role) => ({
      model: status.model,
      role,
      ready: status[role].ready,
      inFlight: status[role].inFlight,
    })),
  );
}
