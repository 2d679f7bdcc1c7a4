/**
 * The metric families behind ProxyMetrics, each registered in one caller-owned Registry
 * (never prom-client's global one, so two proxies in one process never share a counter).
 *
 * TensorRT-LLM's names come from `tensorrt_llm/serve/perf_metrics.py` (reference §5.1). Its
 * Python client appends `_total` to counter names; prom-client does not, so the counters
 * here carry the suffix in their names and the exposed sample names match upstream's.
 */

import { Counter, Gauge, Histogram, type Registry } from "prom-client";
import type { Role } from "../config/types.ts";

/** Upstream's SHORT_TIME_BUCKETS: first-token and per-token latency (and queue latency). */
export const SHORT_TIME_BUCKETS: readonly number[] = Object.freeze([
  0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560,
]);

/** The worker's e2e_request_latency_seconds buckets (tensorrt_llm/metrics/collector.py @ 050f80de). */
const E2E_BUCKETS: readonly number[] = Object.freeze([
  0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920, 7680,
]);

/** Upstream's LONG_TIME_BUCKETS: complete latency. */
export const LONG_TIME_BUCKETS: readonly number[] = Object.freeze([
  0.1, 0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920,
]);

/** Stalls worth counting start at half a second (stall-clock.ts); a paused VM may stop for minutes. */
const STALL_BUCKETS: readonly number[] = Object.freeze([0.5, 1, 2, 5, 10, 30, 60, 300]);

/** Upstream's role prefixes (`ROLE_TO_CLIENT_TYPE`). */
export const ROLE_PREFIX: Readonly<Record<Role, "ctx" | "gen">> = { context: "ctx", generation: "gen" };

/** Server-level counters, unprefixed as upstream has them. */
export interface ServerFamilies {
  readonly totalRequests: Counter;
  readonly streamRequests: Counter;
  readonly nonstreamRequests: Counter;
  readonly validationExceptions: Counter;
  readonly httpExceptions: Counter;
  readonly internalErrors: Counter;
  readonly totalResponses: Counter;
}

/** One upstream role's counters and histograms, prefixed `ctx_` or `gen_`. */
export interface RoleFamilies {
  readonly totalRequests: Counter;
  readonly errorRequests: Counter;
  readonly retryRequests: Counter;
  readonly completedRequests: Counter;
  readonly firstTokenLatency: Histogram;
  readonly completeLatency: Histogram;
  readonly perTokenLatency: Histogram;
}

/** This proxy's own families, prefixed `disagg_proxy_`. */
export interface OwnFamilies {
  readonly requests: Counter<"route" | "outcome">;
  readonly validationFailures: Counter<"route">;
  readonly clientDisconnects: Counter<"route">;
  readonly keepalivesSent: Counter<"route">;
  readonly streamsOpen: Gauge;
  readonly workerInFlight: Gauge<"role" | "url">;
  readonly workerHealthy: Gauge<"role" | "url">;
  readonly workerEjected: Gauge<"role" | "url">;
  readonly workerInfo: Gauge<"role" | "url" | "version">;
  readonly modelWorkersReady: Gauge<"model" | "role">;
  readonly modelInFlight: Gauge<"model" | "role">;
  readonly handoffsSettled: Counter<"reason">;
  readonly handoffsUnsettled: Counter<"reason">;
  readonly requestTraceLines: Counter<"result">;
  readonly requestTracePending: Gauge;
  readonly storeStalls: Histogram;
  readonly e2eLatency: Histogram<"route">;
  readonly timeToFirstToken: Histogram<"route">;
}

function counter<L extends string = string>(registry: Registry, name: string, help: string, labelNames: readonly L[] = []): Counter<L> {
  return new Counter<L>({ name, help, labelNames, registers: [registry] });
}

/**
 * `aggregator`: how the event loops' values add up into the one exposition (num_workers > 1,
 * prom-client's AggregatorRegistry): counts of the loops' own requests are summed; a gauge
 * every loop reads from the shared load, or judges alike, is taken once.
 */
function gauge<L extends string = string>(
  registry: Registry,
  name: string,
  help: string,
  labelNames: readonly L[] = [],
  aggregator: "sum" | "max" | "min" = "sum",
): Gauge<L> {
  return new Gauge<L>({ name, help, labelNames, registers: [registry], aggregator });
}

function histogram(registry: Registry, name: string, help: string, buckets: readonly number[]): Histogram {
  return new Histogram({ name, help, buckets: [...buckets], registers: [registry] });
}

export function serverFamilies(registry: Registry): ServerFamilies {
  return {
    totalRequests: counter(registry, "total_requests_total", "Client requests that passed validation"),
    streamRequests: counter(registry, "stream_requests_total", "Accepted client requests with stream: true"),
    nonstreamRequests: counter(registry, "nonstream_requests_total", "Accepted client requests without streaming"),
    validationExceptions: counter(registry, "validation_exceptions_total", "Client requests refused before any worker saw them"),
    httpExceptions: counter(registry, "http_exceptions_total", "Client requests answered with a 4xx or 5xx HTTP status"),
    internalErrors: counter(registry, "internal_errors_total", "Client requests that ended in an internal error of the proxy"),
    totalResponses: counter(registry, "total_responses_total", "Client requests that ended, whatever the outcome"),
  };
}

export function roleFamilies(registry: Registry, role: Role): RoleFamilies {
  const p = ROLE_PREFIX[role];
  return {
    totalRequests: counter(registry, `${p}_total_requests_total`, `Attempts sent to ${role} workers, retries included`),
    errorRequests: counter(registry, `${p}_error_requests_total`, `Failed attempts at ${role} workers`),
    retryRequests: counter(registry, `${p}_retry_requests_total`, `Retried attempts at ${role} workers`),
    completedRequests: counter(registry, `${p}_completed_requests_total`, `Completed ${role} legs`),
    firstTokenLatency: histogram(
      registry,
      `${p}_first_token_latency_seconds`,
      `Seconds from the start of a ${role} attempt to its first token or answer`,
      SHORT_TIME_BUCKETS,
    ),
    completeLatency: histogram(
      registry,
      `${p}_complete_latency_seconds`,
      `Seconds from the start of a ${role} attempt to its end`,
      LONG_TIME_BUCKETS,
    ),
    perTokenLatency: histogram(
      registry,
      `${p}_per_token_latency_seconds`,
      `Mean seconds between output tokens after the first, one observation per ${role} leg`,
      SHORT_TIME_BUCKETS,
    ),
  };
}

export function ownFamilies(registry: Registry): OwnFamilies {
  const worker = ["role", "url"] as const;
  return {
    requests: counter(registry, "disagg_proxy_requests_total", "Client requests that ended, by route and outcome", ["route", "outcome"]),
    validationFailures: counter(registry, "disagg_proxy_validation_failures_total", "Client requests refused before any worker saw them", [
      "route",
    ]),
    clientDisconnects: counter(registry, "disagg_proxy_client_disconnects_total", "Clients that left before their answer ended", ["route"]),
    keepalivesSent: counter(registry, "disagg_proxy_keepalives_sent_total", "Keepalives sent to silent client streams", ["route"]),
    streamsOpen: gauge(registry, "disagg_proxy_streams_open", "Client streams open now"),
    workerInFlight: gauge(registry, "disagg_proxy_worker_in_flight", "Requests in flight at each worker", worker, "max"),
    workerHealthy: gauge(registry, "disagg_proxy_worker_healthy", "1 if the worker passes its health check, else 0", worker, "min"),
    workerEjected: gauge(
      registry,
      "disagg_proxy_worker_ejected",
      "1 while the worker is ejected because its requests kept failing (its health checks may pass), else 0",
      worker,
      "max",
    ),
    workerInfo: gauge(
      registry,
      "disagg_proxy_worker_info",
      "1 per worker, labelled with the TensorRT-LLM version it reported (unknown: none)",
      [...worker, "version"],
      "max",
    ),
    modelWorkersReady: gauge(
      registry,
      "disagg_proxy_model_workers_ready",
      "Ready workers serving each model (from their GET /v1/models), by role",
      ["model", "role"],
      "min",
    ),
    modelInFlight: gauge(
      registry,
      "disagg_proxy_model_in_flight",
      "Requests in flight at the workers serving each model, by role",
      ["model", "role"],
      "max",
    ),
    handoffsSettled: counter(
      registry,
      "disagg_proxy_handoffs_settled_total",
      "Context-first hand-offs the proxy claimed itself (one-token generation request) after their request ended before its generation leg did, by reason",
      ["reason"],
    ),
    requestTraceLines: counter(
      registry,
      "disagg_proxy_request_trace_lines_total",
      "TRTLLM_REQUEST_TRACE_DIR lines since start, by what became of them: persisted, or dropped (queue_full, write_error, shutdown)",
      ["result"],
    ),
    requestTracePending: gauge(
      registry,
      "disagg_proxy_request_trace_lines_pending",
      "TRTLLM_REQUEST_TRACE_DIR lines queued, not yet written",
    ),
    handoffsUnsettled: counter(
      registry,
      "disagg_proxy_handoffs_unsettled_total",
      "Hand-offs the proxy tried to settle and could not (left to the context worker's kv_transfer_timeout_ms), by reason",
      ["reason"],
    ),
    storeStalls: histogram(
      registry,
      "disagg_proxy_store_stall_seconds",
      "Stalls of the proxy's event loop the HTTP cluster storage found and charged to no key's TTL (the TTLs were extended by them)",
      STALL_BUCKETS,
    ),
    // The worker's own names and buckets (trtllm_*, tensorrt_llm/metrics/collector.py @ 050f80de) for the whole request here.
    e2eLatency: new Histogram({
      name: "disagg_proxy_e2e_request_latency_seconds",
      help: "Seconds from a request's arrival to its end (both phases, retries and restarts included), requests that ended well, by route",
      labelNames: ["route"],
      buckets: [...E2E_BUCKETS],
      registers: [registry],
    }),
    timeToFirstToken: new Histogram({
      name: "disagg_proxy_time_to_first_token_seconds",
      help: "Seconds from a request's arrival to its first output token sent to the client, requests that ended well, by route",
      labelNames: ["route"],
      buckets: [...SHORT_TIME_BUCKETS],
      registers: [registry],
    }),
  };
}
