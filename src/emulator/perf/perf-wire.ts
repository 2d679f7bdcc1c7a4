/**
 * How a trtllm-serve worker puts one request's perf metrics on the wire (reference §5.3,
 * tensorrt_llm/serve/perf_metrics.py): four Server-Timing-style headers for phase "server",
 * an 80 KiB budget, and the trailing `trtllm.perf_metrics` SSE event. The emulator's own
 * encoder, written apart from the proxy's reader and checked against
 * test/fixtures/perf-metrics/, so a wire bug cannot hide by being mirrored on both sides.
 */

export const SERVER_TIMING = "Server-Timing";
export const START_END_TIME = "X-TRTLLM-Start-End-Time";
export const STEP_METRICS = "X-TRTLLM-Step-Metrics";
export const CTX_CHUNK_METRICS = "X-TRTLLM-Ctx-Chunk-Metrics";
const HEADER_ORDER = [SERVER_TIMING, START_END_TIME, STEP_METRICS, CTX_CHUNK_METRICS] as const;
type HeaderName = (typeof HEADER_ORDER)[number];
export type WireHeaders = Partial<Record<HeaderName, string>>;

const RETURN_METRICS_HEADER = "x-trtllm-return-metrics";
const BUDGET_BYTES = 80 * 1024;

/** The phase's timestamps in seconds on the worker's steady clock. */
export interface ServerTiming {
  readonly arrival: number;
  readonly scheduled: number | undefined;
  readonly firstToken: number | undefined;
  readonly lastToken: number | undefined;
  readonly kvStart: number | undefined;
  readonly kvEnd: number | undefined;
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

/** The client asked with `X-TRTLLM-return-metrics: 1` (surrounding spaces allowed). */
export function metricsRequested(headers: Headers): boolean {
  return headers.get(RETURN_METRICS_HEADER)?.trim() === "1";
}

/** Every list of the phase, whole; empty lists absent. */
export function serverPhaseHeaders(timing: ServerTiming, steps: readonly StepTiming[], chunks: readonly StepTiming[]): WireHeaders {
  const durations = [
    ["server_queue", span(timing.arrival, timing.scheduled)],
    ["server_ttft", span(timing.arrival, timing.firstToken)],
    ["server_e2e", span(timing.arrival, timing.lastToken)],
    ["server_kv_transfer", span(timing.kvStart, timing.kvEnd)],
  ] as const;
  const stamps = [
    ["server-start", timing.arrival],
    ["server-end", timing.lastToken],
  ] as const;
  const lists: Record<HeaderName, string[]> = {
    [SERVER_TIMING]: durations.flatMap(([name, ms]) => (ms === undefined ? [] : [`${name};dur=${ms.toFixed(6)}`])),
    [START_END_TIME]: stamps.flatMap(([name, ts]) => (ts === undefined ? [] : [`${name};ts=${ts.toFixed(9)}`])),
    [STEP_METRICS]: steps.flatMap((step, index) => stepItems(`server-step-${step.iter ?? index}`, step)),
    [CTX_CHUNK_METRICS]: chunks.flatMap((chunk, index) => stepItems(`server-ctx-chunk-${index}`, chunk)),
  };
  const headers: WireHeaders = {};
  for (const name of HEADER_ORDER) if (lists[name].length > 0) headers[name] = lists[name].join(", ");
  return headers;
}

/** Over 80 KiB (names + values + 4 bytes per header) only the first two headers are sent. */
export function withinBudget(headers: WireHeaders): WireHeaders {
  let size = 0;
  for (const [name, value] of Object.entries(headers)) size += Buffer.byteLength(name) + Buffer.byteLength(value) + 4;
  if (size <= BUDGET_BYTES) return headers;
  const kept: WireHeaders = {};
  if (headers[SERVER_TIMING] !== undefined) kept[SERVER_TIMING] = headers[SERVER_TIMING];
  if (headers[START_END_TIME] !== undefined) kept[START_END_TIME] = headers[START_END_TIME];
  return kept;
}

/** The event after a stream's last frame: the budgeted headers as compact JSON; none when empty. */
export function perfMetricsEvent(headers: WireHeaders): Uint8Array | undefined {
  const sent = withinBudget(headers);
  if (Object.keys(sent).length === 0) return undefined;
  return new TextEncoder().encode(`event: trtllm.perf_metrics\ndata: ${JSON.stringify(sent)}\n\n`);
}

function stepItems(prefix: string, step: StepTiming): string[] {
  const items = [
    ["forward", span(step.forward_start_time, step.forward_end_time)],
    ["sample", span(step.sample_start_time, step.sample_end_time)],
    ["gpu-forward", nonNegative(step.gpu_forward_time)],
    ["gpu-sample", nonNegative(step.gpu_sample_time)],
  ] as const;
  return items.flatMap(([name, ms]) => (ms === undefined ? [] : [`${prefix}-${name};dur=${ms.toFixed(6)}`]));
}

/** Milliseconds from start to end; undefined when either is unknown or the span is negative. */
function span(start: number | undefined, end: number | undefined): number | undefined {
  return start === undefined || end === undefined ? undefined : nonNegative((end - start) * 1000);
}

function nonNegative(ms: number): number | undefined {
  return Number.isFinite(ms) && ms >= 0 ? ms : undefined;
}
