/**
 * The proxy's per-request observability beyond metrics and logs, built once per server:
 * per-request perf metrics (return_perf_metrics, perf_metrics_output_dir), the /perf_metrics
 * join (perf_metrics_max_requests) and span export (otlp_config). Each part exists only when
 * configured; a request's perf state and spans come from here.
 */

import { hostname } from "node:os";
import type { ProxyConfig } from "../config/types.ts";
import type { JsonObject, JsonValue } from "../json/json.ts";
import type { Logger } from "./logger.ts";
import { OtlpExporter } from "./otlp-exporter.ts";
import { PerfJsonlWriter } from "./perf-jsonl.ts";
import { PerfMetricsJoin } from "./perf-join.ts";
import { requestPerf, type RequestPerf } from "./request-perf.ts";
import { idOnlySpans, requestSpans, type RequestSpans } from "./request-spans.ts";
import { steadySeconds, type SteadyClock } from "./steady-clock.ts";
import { RandomIds, sampled, traceFrom, type TraceContext } from "./trace-context.ts";

type TelemetryConfig = Pick<ProxyConfig, "returnPerfMetrics" | "perfMetricsOutputDir" | "perfMetricsMaxRequests" | "otlpTracesEndpoint">;

export interface TelemetryDeps {
  readonly logger: Logger;
  readonly version: string;
  /** Every worker origin, for the /perf_metrics poll. */
  readonly workerOrigins: () => readonly string[];
  readonly fetchWorkerPerfMetrics: (origin: string) => Promise<readonly JsonValue[]>;
  readonly clock?: SteadyClock;
}

/** What the end of a request tells the telemetry (a request's summary as it is: no copy made per request). */
export interface FinishedRequestInfo {
  readonly disaggRequestId: bigint;
  readonly engineRequestId: bigint;
  readonly contextWorker: string | undefined;
  readonly generationWorker: string | undefined;
  /** "ok" when it completed; only those are recorded. */
  readonly outcome: string;
  readonly durationMs: number;
  readonly ttftMs: number | undefined;
}

export class Telemetry {
  readonly jsonl: PerfJsonlWriter | undefined;
  readonly exporter: OtlpExporter | undefined;
  readonly #join: PerfMetricsJoin | undefined;
  readonly #config: TelemetryConfig;
  readonly #clock: SteadyClock;
  readonly #ids = new RandomIds();
  /** What every request gets when its spans are not exported: one shared set, no closures per request. */
  readonly #idOnlySpans = idOnlySpans(this.#ids.hex);

  constructor(config: TelemetryConfig, deps: TelemetryDeps) {
    this.#config = config;
    this.#clock = deps.clock ?? steadySeconds;
    const dir = config.perfMetricsOutputDir;
    this.jsonl =
      dir === undefined
        ? undefined
        : new PerfJsonlWriter({ dir, hostname: hostname(), pid: process.pid, startedAt: new Date(), logger: deps.logger });
    this.#join =
      config.perfMetricsMaxRequests > 0
        ? new PerfMetricsJoin(config.perfMetricsMaxRequests, { origins: deps.workerOrigins, fetchRecords: deps.fetchWorkerPerfMetrics })
        : undefined;
    const endpoint = config.otlpTracesEndpoint;
    this.exporter =
      endpoint === undefined
        ? undefined
        : new OtlpExporter({ endpoint, serviceName: "disagg-proxy", serviceVersion: deps.version, logger: deps.logger });
  }

  /** A request's perf state: undefined unless the client may have its metrics or they are written to files. */
  perfFor(client: Headers): RequestPerf | undefined {
    return requestPerf(
      { expose: this.#config.returnPerfMetrics, collectAlways: this.#config.perfMetricsOutputDir !== undefined },
      client,
      this.#clock,
    );
  }

  /** The client's trace (or a new one), with the proxy's own span id. */
  traceFor(client: Headers): TraceContext {
    return traceFrom(client, this.#ids.hex);
  }

  spansFor(trace: TraceContext, route: string): RequestSpans {
    const exporter = this.exporter;
    if (exporter === undefined || !sampled(trace)) return this.#idOnlySpans;
    return requestSpans(trace, route, (span) => exporter.add(span), this.#ids.hex);
  }

  /** A request ended: its JSONL record and its /perf_metrics entry, when it completed; `perf` its perf state, if collected. */
  finished(info: FinishedRequestInfo, perf: RequestPerf | undefined): void {
    if (info.outcome !== "ok") return;
    if (perf !== undefined) this.jsonl?.submit(perf.record(info.disaggRequestId, info.engineRequestId));
    if (this.#join !== undefined && info.generationWorker !== undefined) {
      const arrivalTime = perf?.arrivalTime ?? this.#clock() - info.durationMs / 1000;
      this.#join.add({
        contextOrigin: info.contextWorker,
        generationOrigin: info.generationWorker,
        ctxRequestId: info.engineRequestId,
        arrivalTime,
        firstTokenTime: info.ttftMs === undefined ? undefined : arrivalTime + info.ttftMs / 1000,
      });
    }
  }

  /** GET /perf_metrics: [] unless perf_metrics_max_requests > 0. */
  perfMetrics(): Promise<JsonObject[]> {
    return this.#join?.collect() ?? Promise.resolve([]);
  }

  /** Writes queued JSONL records and exports queued spans (call before exit). */
  async flush(): Promise<void> {
    await Promise.all([this.jsonl?.flush(), this.exporter?.flush()]);
  }
}
