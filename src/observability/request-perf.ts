/**
 * One request's per-request perf metrics (reference §5.3): the proxy's own "disagg" phase
 * (arrival, context dispatch, first token, end) and what each worker reported, merged into the
 * client's headers or trailing event, and into the JSONL record.
 */

import { jsonInteger, type JsonObject, type JsonValue } from "../json/json.ts";
import { limitMetricsHeaders, MetricsHeaderBuilder, metricsEvent, metricsRequested, type MetricsHeaders } from "./perf-format.ts";
import { workerMetricsFromEvent, workerMetricsFromHeaders, type WorkerMetrics, type WorkerPhase } from "./perf-worker-metrics.ts";
import type { SteadyClock } from "./steady-clock.ts";

export interface PerfSettings {
  /** return_perf_metrics: clients may ask for the merged metrics. */
  readonly expose: boolean;
  /** perf_metrics_output_dir is set: every request's metrics are collected for the JSONL file. */
  readonly collectAlways: boolean;
}

/** The request's perf state, or undefined when nothing will read it (workers are then not asked). */
export function requestPerf(settings: PerfSettings, client: Headers, clock: SteadyClock): RequestPerf | undefined {
  const exposed = settings.expose && metricsRequested(client);
  return exposed || settings.collectAlways ? new RequestPerf(exposed, clock) : undefined;
}

interface PhaseReport {
  readonly server: string;
  metrics: WorkerMetrics | undefined;
}

export class RequestPerf {
  /** The client asked, and may have them: headers on a JSON answer, the trailing event on a stream. */
  readonly exposed: boolean;
  readonly arrivalTime: number;
  readonly #clock: SteadyClock;
  #ctxDispatchTime: number | undefined;
  #firstTokenTime: number | undefined;
  #lastTokenTime: number | undefined;
  readonly #phases: Partial<Record<WorkerPhase, PhaseReport>> = {};

  constructor(exposed: boolean, clock: SteadyClock) {
    this.exposed = exposed;
    this.#clock = clock;
    this.arrivalTime = clock();
  }

  markContextDispatch(): void {
    this.#ctxDispatchTime ??= this.#clock();
  }

  markFirstToken(): void {
    this.#firstTokenTime ??= this.#clock();
  }

  markDone(): void {
    this.#lastTokenTime ??= this.#clock();
  }

  /** A worker answered the phase (`origin` served it); its headers may carry its metrics. */
  workerAnswered(phase: WorkerPhase, origin: string, headers: Headers): void {
    this.#phases[phase] = { server: serverName(origin), metrics: workerMetricsFromHeaders(headers, phase) };
  }

  /** The data of the generation worker's own trailing `trtllm.perf_metrics` event. */
  workerEvent(phase: WorkerPhase, data: string): void {
    const report = this.#phases[phase];
    const metrics = workerMetricsFromEvent(data, phase);
    if (report !== undefined && metrics !== undefined) report.metrics = metrics;
  }

  /** Every phase's lists, unbudgeted: disagg (measured here), then ctx and gen as the workers sent them. */
  merged(): MetricsHeaders {
    const builder = new MetricsHeaderBuilder().addPhase("disagg", {
      arrival_time: this.arrivalTime,
      last_token_time: this.#lastTokenTime,
      server_arrival_time: this.arrivalTime,
      ctx_dispatch_time: this.#ctxDispatchTime,
      server_first_token_time: this.#firstTokenTime,
    });
    return builder.addInherited(this.#phases.ctx?.metrics?.headers).addInherited(this.#phases.gen?.metrics?.headers).headers();
  }

  /** The client's response headers (within the budget). */
  clientHeaders(): MetricsHeaders {
    return limitMetricsHeaders(this.merged()).headers;
  }

  /** The final event of the client's stream. */
  clientEvent(): Uint8Array | undefined {
    return metricsEvent(this.merged());
  }

  /** The JSONL record of a completed disaggregated request, as trtllm-serve writes it. */
  record(disaggRequestId: bigint, ctxRequestId: bigint): JsonObject {
    const record: JsonObject = {
      ctx_server: this.#phases.ctx?.server ?? "",
      gen_server: this.#phases.gen?.server ?? "",
      disagg_server_arrival_time: this.arrivalTime,
      disagg_ctx_dispatch_time: this.#ctxDispatchTime ?? null,
      disagg_server_first_token_time: this.#firstTokenTime ?? null,
      status: "complete",
    };
    for (const phase of ["ctx", "gen"] as const) {
      const metrics = this.#phases[phase]?.metrics;
      if (metrics !== undefined) record[`${phase}_perf_metrics`] = workerRecord(metrics, disaggRequestId, ctxRequestId);
    }
    record["disagg_request_id"] = jsonInteger(disaggRequestId);
    return record;
  }
}

/** A worker's part of the record: only what its metrics headers told (no KV or iteration counts). */
function workerRecord(metrics: WorkerMetrics, requestId: bigint, ctxRequestId: bigint): JsonObject {
  const timing: Record<string, JsonValue> = { ...metrics.timing };
  // Without kv_cache_size (never in headers) the KV transfer stamps are left out, as upstream does.
  delete timing["kv_cache_transfer_start"];
  delete timing["kv_cache_transfer_end"];
  return { request_id: jsonInteger(requestId), perf_metrics: { timing_metrics: timing }, ctx_request_id: jsonInteger(ctxRequestId) };
}

/** Workers are named as in TensorRT-LLM's config: host:port. */
export function serverName(origin: string): string {
  return URL.canParse(origin) ? new URL(origin).host : origin;
}
