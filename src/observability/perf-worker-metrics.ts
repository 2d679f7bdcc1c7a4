/**
 * What a worker reported about its phase of one request: its metrics headers (non-streamed
 * answers) or the trailing `trtllm.perf_metrics` event (streams), renamed from the worker's
 * `server_`/`server-` to the phase's `ctx_`/`gen_`, and the timestamps they imply.
 */

import { isJsonObject, parseJsonOrUndefined } from "../json/json.ts";
import { METRICS_HEADER_NAMES, SERVER_TIMING, START_END_TIME, type MetricsHeaders } from "./perf-format.ts";

export type WorkerPhase = "ctx" | "gen";

export interface WorkerMetrics {
  /** The worker's lists, renamed for the phase. */
  readonly headers: MetricsHeaders;
  /** Seconds, in the worker's clock as adjusted by the start-up sync. */
  readonly timing: Readonly<Record<string, number>>;
}

/** From a worker's response headers; undefined when it sent none. */
export function workerMetricsFromHeaders(headers: Headers, phase: WorkerPhase): WorkerMetrics | undefined {
  return workerMetrics((name) => headers.get(name) ?? undefined, phase);
}

/** From the data of a worker's `trtllm.perf_metrics` event; undefined when it is not a metrics object. */
export function workerMetricsFromEvent(data: string, phase: WorkerPhase): WorkerMetrics | undefined {
  const parsed = parseJsonOrUndefined(data);
  if (!isJsonObject(parsed)) return undefined;
  return workerMetrics((name) => {
    const value = parsed[name];
    return typeof value === "string" ? value : undefined;
  }, phase);
}

function workerMetrics(read: (name: string) => string | undefined, phase: WorkerPhase): WorkerMetrics | undefined {
  const headers: MetricsHeaders = {};
  for (const name of METRICS_HEADER_NAMES) {
    const value = read(name);
    if (value) headers[name] = value.replaceAll("server_", `${phase}_`).replaceAll("server-", `${phase}-`);
  }
  if (Object.keys(headers).length === 0) return undefined;
  return { headers, timing: timingOf(headers, phase) };
}

/** Start and end from X-TRTLLM-Start-End-Time; queue, first token and e2e from Server-Timing durations. */
function timingOf(headers: MetricsHeaders, phase: WorkerPhase): Record<string, number> {
  const timing: Record<string, number> = {};
  const fields: Record<string, string> = { [`${phase}-start`]: "arrival_time", [`${phase}-end`]: "last_token_time" };
  for (const [name, value] of items(headers[START_END_TIME], ";ts=")) {
    const field = fields[name];
    if (field !== undefined && value !== undefined) timing[field] = value;
  }
  const durations: Record<string, number> = {};
  for (const [name, value] of items(headers[SERVER_TIMING], ";dur=")) {
    if (name.startsWith(`${phase}_`) && value !== undefined) durations[name.slice(phase.length + 1)] = value / 1000;
  }
  const arrival = timing["arrival_time"];
  if (arrival !== undefined) {
    for (const [name, field] of [
      ["queue", "first_scheduled_time"],
      ["ttft", "first_token_time"],
      ["e2e", "last_token_time"],
    ] as const) {
      const duration = durations[name];
      if (duration !== undefined) timing[field] ??= arrival + duration;
    }
  }
  return timing;
}

/** `name;sep=value, …` as [name, value] pairs; a value that is not a number is undefined. */
function items(list: string | undefined, separator: string): [string, number | undefined][] {
  if (list === undefined) return [];
  return list.split(",").flatMap((item) => {
    const at = item.indexOf(separator);
    if (at === -1) return [];
    const text = item.slice(at + separator.length).trim();
    const value = text === "" ? Number.NaN : Number(text);
    return [[item.slice(0, at).trim(), Number.isFinite(value) ? value : undefined]];
  });
}
