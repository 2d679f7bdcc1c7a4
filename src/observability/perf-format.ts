/**
 * TensorRT-LLM's per-request metrics on the wire (reference §5.3): the four Server-Timing-style
 * headers, how one phase's timestamps become them, the 80 KiB budget and the trailing SSE event.
 * The proxy's side: it merges ctx_/gen_ phases (the emulated worker writes its "server" phase with
 * its own encoder, src/emulator/perf/perf-wire.ts; both are checked against test/fixtures/perf-metrics/).
 */

export const SERVER_TIMING = "Server-Timing";
export const START_END_TIME = "X-TRTLLM-Start-End-Time";
export const STEP_METRICS = "X-TRTLLM-Step-Metrics";
export const CTX_CHUNK_METRICS = "X-TRTLLM-Ctx-Chunk-Metrics";
export const METRICS_HEADER_NAMES = [SERVER_TIMING, START_END_TIME, STEP_METRICS, CTX_CHUNK_METRICS] as const;
export type MetricsHeaderName = (typeof METRICS_HEADER_NAMES)[number];
/** Header name → its comma-joined metric list, in METRICS_HEADER_NAMES order; empty lists absent. */
export type MetricsHeaders = Partial<Record<MetricsHeaderName, string>>;

export const RETURN_METRICS_HEADER = "x-trtllm-return-metrics";
export const PERF_EVENT_NAME = "trtllm.perf_metrics";
/** Above this (names + values + 4 bytes each) step and chunk metrics are left out. */
export const METRICS_PAYLOAD_BUDGET_BYTES = 80 * 1024;

/** One phase's timestamps in seconds (absent or null: unknown). */
export interface PhaseTiming {
  readonly arrival_time?: number | null | undefined;
  readonly first_scheduled_time?: number | null | undefined;
  readonly first_token_time?: number | null | undefined;
  readonly last_token_time?: number | null | undefined;
  readonly kv_cache_transfer_start?: number | null | undefined;
  readonly kv_cache_transfer_end?: number | null | undefined;
  readonly server_arrival_time?: number | null | undefined;
  readonly ctx_dispatch_time?: number | null | undefined;
  readonly server_first_token_time?: number | null | undefined;
}

/** One engine iteration (or context chunk): wall times in seconds, GPU times in ms. */
export interface StepTiming {
  readonly iter?: number;
  readonly forward_start_time: number;
  readonly forward_end_time: number;
  readonly sample_start_time: number;
  readonly sample_end_time: number;
  readonly gpu_forward_time: number;
  readonly gpu_sample_time: number;
}

export interface TimeBreakdown {
  readonly step_metrics?: readonly StepTiming[];
  readonly ctx_chunk_metrics?: readonly StepTiming[];
}

type Lists = Record<MetricsHeaderName, string[]>;

/** Accumulates phases in order; `headers()` joins them. */
export class MetricsHeaderBuilder {
  readonly #lists: Lists = { [SERVER_TIMING]: [], [START_END_TIME]: [], [STEP_METRICS]: [], [CTX_CHUNK_METRICS]: [] };

  /** A phase measured here: its start/end, its durations, its steps and chunks. */
  addPhase(phase: string, timing: PhaseTiming, breakdown?: TimeBreakdown): this {
    for (const [name, value] of [
      ["start", timing.arrival_time],
      ["end", timing.last_token_time],
    ] as const) {
      if (typeof value === "number") this.#lists[START_END_TIME].push(`${phase}-${name};ts=${value.toFixed(9)}`);
    }
    for (const [name, start, end] of phase === "disagg" ? DISAGG_RANGES : WORKER_RANGES) {
      const duration = elapsedMs(timing[start], timing[end]);
      if (duration !== undefined) this.#lists[SERVER_TIMING].push(`${phase}_${name};dur=${duration.toFixed(6)}`);
    }
    this.#addSteps(STEP_METRICS, phase, "step", breakdown?.step_metrics ?? [], true);
    this.#addSteps(CTX_CHUNK_METRICS, phase, "ctx-chunk", breakdown?.ctx_chunk_metrics ?? [], false);
    return this;
  }

  /** A phase measured elsewhere: the worker's own lists, already named for the phase. */
  addInherited(headers: MetricsHeaders | undefined): this {
    for (const name of METRICS_HEADER_NAMES) {
      const value = headers?.[name];
      if (value) this.#lists[name].push(value);
    }
    return this;
  }

  headers(): MetricsHeaders {
    const out: MetricsHeaders = {};
    for (const name of METRICS_HEADER_NAMES) if (this.#lists[name].length > 0) out[name] = this.#lists[name].join(", ");
    return out;
  }

  #addSteps(header: MetricsHeaderName, phase: string, label: string, steps: readonly StepTiming[], byIter: boolean): void {
    steps.forEach((step, index) => {
      const item = byIter ? (step.iter ?? index) : index;
      const durations: [string, number | undefined][] = [
        ["forward", elapsedMs(step.forward_start_time, step.forward_end_time)],
        ["sample", elapsedMs(step.sample_start_time, step.sample_end_time)],
        ["gpu-forward", validMs(step.gpu_forward_time)],
        ["gpu-sample", validMs(step.gpu_sample_time)],
      ];
      for (const [name, ms] of durations)
        if (ms !== undefined) this.#lists[header].push(`${phase}-${label}-${item}-${name};dur=${ms.toFixed(6)}`);
    });
  }
}

type Range = readonly [string, keyof PhaseTiming, keyof PhaseTiming];
const DISAGG_RANGES: readonly Range[] = [
  ["queue", "server_arrival_time", "ctx_dispatch_time"],
  ["ttft", "server_arrival_time", "server_first_token_time"],
];
const WORKER_RANGES: readonly Range[] = [
  ["queue", "arrival_time", "first_scheduled_time"],
  ["ttft", "arrival_time", "first_token_time"],
  ["e2e", "arrival_time", "last_token_time"],
  ["kv_transfer", "kv_cache_transfer_start", "kv_cache_transfer_end"],
];

function elapsedMs(start: number | null | undefined, end: number | null | undefined): number | undefined {
  if (typeof start !== "number" || typeof end !== "number") return undefined;
  return validMs((end - start) * 1000);
}

function validMs(value: number | undefined): number | undefined {
  return value !== undefined && Number.isFinite(value) && value >= 0 ? value : undefined;
}

function payloadBytes(headers: MetricsHeaders): number {
  let size = 0;
  for (const [name, value] of Object.entries(headers)) size += Buffer.byteLength(name) + Buffer.byteLength(value) + 4;
  return size;
}

/** Over the budget, only Server-Timing and X-TRTLLM-Start-End-Time are kept. */
export function limitMetricsHeaders(headers: MetricsHeaders): { headers: MetricsHeaders; trimmed: boolean } {
  if (payloadBytes(headers) <= METRICS_PAYLOAD_BUDGET_BYTES) return { headers, trimmed: false };
  const kept: MetricsHeaders = {};
  for (const name of [SERVER_TIMING, START_END_TIME] as const) if (headers[name] !== undefined) kept[name] = headers[name];
  return { headers: kept, trimmed: true };
}

const encoder = new TextEncoder();

/** `event: trtllm.perf_metrics` with the (budgeted) headers as compact JSON; undefined when empty. */
export function metricsEvent(headers: MetricsHeaders): Uint8Array | undefined {
  const limited = limitMetricsHeaders(headers).headers;
  if (Object.keys(limited).length === 0) return undefined;
  return encoder.encode(`event: ${PERF_EVENT_NAME}\ndata: ${JSON.stringify(limited)}\n\n`);
}

/** The client asked with `X-TRTLLM-return-metrics: 1` (surrounding spaces allowed). */
export function metricsRequested(headers: Headers): boolean {
  return headers.get(RETURN_METRICS_HEADER)?.trim() === "1";
}
