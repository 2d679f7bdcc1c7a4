import type { ProxyMetrics, WorkerGaugeSource } from "../observability/metrics.ts";
import type { RequestHooks } from "../request/context.ts";
import type { Placement } from "../routing/placement.ts";

/** A request's hooks, feeding the metrics under its route. */
export function metricsHooks(metrics: ProxyMetrics, route: string): RequestHooks {
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

/** The worker gauges, read at scrape time from the pool and the reservation table. */
export function workerGauges(placement: Placement): ReturnType<WorkerGaugeSource["workers"]> {
  return (["context", "generation"] as const).flatMap((role) =>
    placement.pool.all(role).map((worker) => ({
      role,
      url: worker.origin,
      inFlight: placement.table.load(role, worker.origin),
      healthy: worker.ready,
    })),
  );
}
