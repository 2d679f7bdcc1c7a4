/**
 * Prometheus metrics for /prometheus/metrics and /metrics, under TensorRT-LLM's names so
 * existing dashboards keep working (reference §5.1), plus the proxy's own `disagg_proxy_*`.
 *
 * How the calls map onto upstream's server-level counters:
 * - total_requests_total: requestAccepted; stream_requests_total / nonstream_requests_total split it.
 * - validation_exceptions_total: validationFailed.
 * - total_responses_total: every requestEnded, whatever the outcome.
 * - http_exceptions_total: requestEnded with status ≥ 400 (a stream that fails after its 200
 *   headers keeps status 200 and is not counted here; its outcome still is).
 * - internal_errors_total: requestEnded with outcome internal_error.
 * A refused request is expected to get validationFailed and then requestEnded(…, "rejected", status).
 *
 * Per role (`ctx_` / `gen_`): upstreamAttempt → total_requests_total, upstreamRetry →
 * retry_requests_total, upstreamError → error_requests_total, upstreamCompleted →
 * completed_requests_total and the three histograms. Upstream observes per_token_latency once
 * per received chunk; here it is one observation per leg of the mean gap between output tokens
 * after the first, (complete − first token) / (tokens − 1), so the cost stays O(1) per request.
 *
 * Labels: `route` must be the route pattern (a fixed set), never the raw request URL.
 */

import { AggregatorRegistry, collectDefaultMetrics, Registry, type MetricObjectWithValues, type MetricValue } from "prom-client";
import { ownFamilies, roleFamilies, serverFamilies, type OwnFamilies, type RoleFamilies } from "./metrics-families.ts";
import type { Role } from "../config/types.ts";
import type { TraceCounts } from "./request-trace.ts";
import {
  heldCount,
  HeldCounts,
  heldObservations,
  HeldObservationsBy,
  type Held,
  type HeldCount,
  type HeldObservations,
} from "./held-metrics.ts";

/** One worker's gauges. */
export interface WorkerGauges {
  role: Role;
  url: string;
  inFlight: number;
  healthy: boolean;
  ejected?: boolean;
  version?: string;
}

/** One served model's gauges, by role. */
export interface ModelGauges {
  model: string;
  role: Role;
  ready: number;
  inFlight: number;
}

/** What the gauges show, read at every scrape: the workers, the served models, the request trace. */
export interface ScrapeGaugeSource {
  /** Called at scrape time. */
  workers(): readonly WorkerGauges[];
  /** Called at scrape time: each served model's ready workers and in-flight requests by role (none when no worker named its model). */
  models?(): readonly ModelGauges[];
  /** Called at scrape time: what became of the request trace's lines (undefined: no trace written). */
  requestTrace?(): TraceCounts | undefined;
}

export interface ProxyMetrics {
  /** A client request that passed validation. */
  requestAccepted(route: string, stream: boolean): void;
  /** A client request refused before any worker saw it (bad body, auth, admission, draining). */
  validationFailed(route: string): void;
  /** A request ended; outcome is one of ok | worker_error | client_disconnected | timeout | rejected | internal_error. */
  requestEnded(route: string, outcome: string, status: number): void;
  /** A request that ended well: its whole duration and its time to first token (undefined: it sent none). */
  requestLatency(route: string, durationSeconds: number, firstTokenSeconds: number | undefined): void;
  /** One upstream attempt of a leg (retries included). */
  upstreamAttempt(role: Role): void;
  upstreamRetry(role: Role): void;
  upstreamError(role: Role): void;
  /** A leg completed: seconds from the attempt's start to its first token (or answer) and to its end; tokens if known. */
  upstreamCompleted(role: Role, firstTokenSeconds: number, completeSeconds: number, outputTokens?: number): void;
  keepaliveSent(route: string): void;
  streamOpened(): void;
  streamClosed(): void;
  clientDisconnected(route: string): void;
  /** A hand-off the proxy settled (`settled`) or failed to, by why it had to. */
  handoffSettled(reason: string, settled: boolean): void;
  /** A stall of the event loop that the HTTP cluster storage left uncharged to its TTLs. */
  storeStalled(seconds: number): void;
  /** Text exposition (Prometheus 0.0.4) for /prometheus/metrics and /metrics. */
  render(): Promise<string>;
  /** The same values as data, for another event loop to add up with its own (`renderAll`). */
  values(): Promise<LoopMetrics>;
  readonly contentType: string;
}

/** One event loop's metrics as prom-client hands them between processes. */
export type LoopMetrics = MetricObjectWithValues<MetricValue<string>>[];

/** The event loops' metrics as one exposition (num_workers > 1): counters and histograms summed, gauges by their aggregator. */
export async function renderAll(loops: readonly LoopMetrics[]): Promise<string> {
  return exposition(await AggregatorRegistry.aggregate([...loops]).metrics());
}

function exposition(text: string): string {
  return text.replaceAll(INTEGRAL_LE, '$1$2.0"');
}

/** Python's client writes integral bucket bounds as `1.0`, prom-client as `1`; dashboards may match `le="1.0"`. */
const INTEGRAL_LE = /([{,]le=")(\d+)"/g;

/** A duration fit for a histogram: prom-client throws on NaN/±Infinity, and a clock step must not go negative. */
function seconds(value: number): number | undefined {
  return Number.isFinite(value) ? Math.max(0, value) : undefined;
}

/** One role's counts and observations, held between scrapes (held-metrics.ts). */
interface HeldRole {
  readonly totalRequests: HeldCount;
  readonly errorRequests: HeldCount;
  readonly retryRequests: HeldCount;
  readonly completedRequests: HeldCount;
  readonly firstTokenLatency: HeldObservations;
  readonly completeLatency: HeldObservations;
  readonly perTokenLatency: HeldObservations;
}

function heldRole(family: RoleFamilies): HeldRole {
  return {
    totalRequests: heldCount(family.totalRequests),
    errorRequests: heldCount(family.errorRequests),
    retryRequests: heldCount(family.retryRequests),
    completedRequests: heldCount(family.completedRequests),
    firstTokenLatency: heldObservations(family.firstTokenLatency),
    completeLatency: heldObservations(family.completeLatency),
    perTokenLatency: heldObservations(family.perTokenLatency),
  };
}

function observeLeg(family: HeldRole, firstTokenSeconds: number, completeSeconds: number, outputTokens?: number): void {
  family.completedRequests.inc();
  const first = seconds(firstTokenSeconds);
  const complete = seconds(completeSeconds);
  if (first !== undefined) family.firstTokenLatency.observe(first);
  if (complete !== undefined) family.completeLatency.observe(complete);
  if (first === undefined || complete === undefined || outputTokens === undefined || !(outputTokens >= 2)) return;
  const perToken = seconds((complete - first) / (outputTokens - 1));
  if (perToken !== undefined) family.perTokenLatency.observe(perToken);
}

/** The gauges read from `source` at scrape time, each family from its own part of it. */
function refreshScrapeGauges(own: OwnFamilies, source: ScrapeGaugeSource, counted: Map<string, number>): void {
  refreshWorkerGauges(own, source.workers());
  refreshModelGauges(own, source.models?.() ?? []);
  const trace = source.requestTrace?.();
  if (trace !== undefined) refreshTraceCounts(own, trace, counted);
}

function refreshWorkerGauges(own: OwnFamilies, workers: readonly WorkerGauges[]): void {
  // Reset first so a worker that left the pool leaves the exposition too.
  own.workerInFlight.reset();
  own.workerHealthy.reset();
  own.workerInfo.reset();
  own.workerEjected.reset();
  for (const worker of workers) {
    const labels = { role: worker.role, url: worker.url };
    own.workerInFlight.set(labels, worker.inFlight);
    own.workerHealthy.set(labels, worker.healthy ? 1 : 0);
    own.workerEjected.set(labels, worker.ejected === true ? 1 : 0);
    own.workerInfo.set({ ...labels, version: worker.version ?? "unknown" }, 1);
  }
}

function refreshModelGauges(own: OwnFamilies, models: readonly ModelGauges[]): void {
  // Reset first so a model no worker serves any more leaves the exposition too.
  own.modelWorkersReady.reset();
  own.modelInFlight.reset();
  for (const served of models) {
    const labels = { model: served.model, role: served.role };
    own.modelWorkersReady.set(labels, served.ready);
    own.modelInFlight.set(labels, served.inFlight);
  }
}

/** The trace's counts since start, as counters: each scrape adds what grew since the last (`counted`). */
function refreshTraceCounts(own: OwnFamilies, trace: TraceCounts, counted: Map<string, number>): void {
  own.requestTracePending.set(trace.pending);
  for (const [result, count] of [["persisted", trace.persisted], ...Object.entries(trace.dropped)] as const) {
    own.requestTraceLines.inc({ result }, Math.max(0, count - (counted.get(result) ?? 0)));
    counted.set(result, Math.max(count, counted.get(result) ?? 0));
  }
}

/**
 * A fresh, independent set of metrics; `source` is read on every render(). `processMetrics`:
 * prom-client's process and runtime collectors (RSS, CPU, open fds, event-loop lag), on one event
 * loop only: they read the whole process, so a second loop's would be summed into double.
 */
export function createMetrics(
  source: ScrapeGaugeSource,
  options: { readonly processMetrics: boolean } = { processMetrics: false },
): ProxyMetrics {
  const registry = new Registry();
  if (options.processMetrics) collectDefaultMetrics({ register: registry });
  const server = serverFamilies(registry);
  const roleFamily: Readonly<Record<Role, RoleFamilies>> = {
    context: roleFamilies(registry, "context"),
    generation: roleFamilies(registry, "generation"),
  };
  const own = ownFamilies(registry);
  // What every request counts and observes is held here and handed to the families at each scrape.
  const held = {
    totalRequests: heldCount(server.totalRequests),
    streamRequests: heldCount(server.streamRequests),
    nonstreamRequests: heldCount(server.nonstreamRequests),
    validationExceptions: heldCount(server.validationExceptions),
    httpExceptions: heldCount(server.httpExceptions),
    internalErrors: heldCount(server.internalErrors),
    totalResponses: heldCount(server.totalResponses),
    requests: new HeldCounts(own.requests, "route", "outcome"),
    validationFailures: new HeldCounts(own.validationFailures, "route"),
    clientDisconnects: new HeldCounts(own.clientDisconnects, "route"),
    keepalivesSent: new HeldCounts(own.keepalivesSent, "route"),
    e2eLatency: new HeldObservationsBy(own.e2eLatency, "route"),
    timeToFirstToken: new HeldObservationsBy(own.timeToFirstToken, "route"),
  };
  const roles: Readonly<Record<Role, HeldRole>> = { context: heldRole(roleFamily.context), generation: heldRole(roleFamily.generation) };
  const everyHeld: readonly Held[] = [...Object.values(held), ...Object.values(roles).flatMap((role) => Object.values(role))];
  const handOn = (): void => {
    for (const values of everyHeld) values.flush();
  };
  // What the trace's counters have been given so far.
  const traceCounted = new Map<string, number>();
  return {
    requestAccepted(_route, stream) {
      held.totalRequests.inc();
      (stream ? held.streamRequests : held.nonstreamRequests).inc();
    },
    validationFailed(route) {
      held.validationExceptions.inc();
      held.validationFailures.inc(route);
    },
    requestEnded(route, outcome, status) {
      held.totalResponses.inc();
      if (status >= 400) held.httpExceptions.inc();
      if (outcome === "internal_error") held.internalErrors.inc();
      held.requests.inc(route, outcome);
    },
    requestLatency(route, durationSeconds, firstTokenSeconds) {
      const whole = seconds(durationSeconds);
      if (whole !== undefined) held.e2eLatency.observe(route, whole);
      const first = firstTokenSeconds === undefined ? undefined : seconds(firstTokenSeconds);
      if (first !== undefined) held.timeToFirstToken.observe(route, first);
    },
    upstreamAttempt: (role) => roles[role].totalRequests.inc(),
    upstreamRetry: (role) => roles[role].retryRequests.inc(),
    upstreamError: (role) => roles[role].errorRequests.inc(),
    upstreamCompleted: (role, firstTokenSeconds, completeSeconds, outputTokens) =>
      observeLeg(roles[role], firstTokenSeconds, completeSeconds, outputTokens),
    keepaliveSent: (route) => held.keepalivesSent.inc(route),
    streamOpened: () => own.streamsOpen.inc(),
    streamClosed: () => own.streamsOpen.dec(),
    clientDisconnected: (route) => held.clientDisconnects.inc(route),
    handoffSettled: (reason, settled) => (settled ? own.handoffsSettled : own.handoffsUnsettled).inc({ reason }),
    storeStalled: (stall) => {
      const value = seconds(stall);
      if (value !== undefined) own.storeStalls.observe(value);
    },
    async render() {
      handOn();
      refreshScrapeGauges(own, source, traceCounted);
      return exposition(await registry.metrics());
    },
    async values() {
      handOn();
      refreshScrapeGauges(own, source, traceCounted);
      return registry.getMetricsAsJSON();
    },
    contentType: registry.contentType,
  };
}
