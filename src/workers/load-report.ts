/**
 * A worker's own report of its load, read from its Prometheus page (GET /prometheus/metrics).
 *
 * What trtllm-serve exposes, and since when:
 * - `GET /metrics` answers the iteration stats queued since the last call
 *   (tensorrt_llm/serve/openai_server.py @ 00057725, get_iteration_stats: `async for stat in
 *   self.generator.get_stats_async(2)`): a drain, so a proxy polling it would take the stats
 *   from the operator's own collector, and an idle worker answers []. Not used.
 * - `GET /prometheus/metrics` carries gauges MetricsCollector.log_iteration_stats sets from
 *   each iteration: `num_requests_running` (numActiveRequests), `num_requests_waiting`
 *   (numQueuedRequests) and `trtllm_kv_cache_utilization` (usedNumBlocks / maxNumBlocks)
 *   (tensorrt_llm/metrics/collector.py, read_file id 67111778426, where the first two have no
 *   prefix; tests/unittest/metrics/test_collector.py @ 795ccdf7). Newer builds name all three
 *   `trtllm_…`, which is what the Kubernetes inference gateway reads since GIE #2713
 *   (2026-03-27; TensorRT-LLM #12545 added the gauges it needs). A worker sets them only when
 *   started with `enable_iter_perf_stats`, and the page is mounted only with `return_perf_metrics`
 *   (openai_server.py @ 00057725, mount_metrics); a
 *   worker without them reports nothing and the proxy keeps its own counts.
 * Read without the exposition's help or type lines; every series of a name summed (one per
 * model_name or engine label set).
 */

import { getFromWorker, readBounded } from "./answers.ts";
import type { WorkerFetch } from "./transport.ts";

export interface LoadReport {
  /** Requests the engine runs now. */
  readonly running: number;
  /** Requests waiting in its queue. */
  readonly waiting: number;
  /** Share of its KV cache blocks in use (0–1), when reported. */
  readonly kvUtilization: number | undefined;
}

export const LOAD_REPORT_PATH = "/prometheus/metrics";
/** A worker's Prometheus page, histograms included, is tens of KB; more than this is not one. */
export const MAX_LOAD_REPORT_BYTES = 1024 * 1024;

const NAMES: Readonly<Record<string, keyof LoadReport>> = {
  trtllm_num_requests_running: "running",
  num_requests_running: "running",
  trtllm_num_requests_waiting: "waiting",
  num_requests_waiting: "waiting",
  trtllm_kv_cache_utilization: "kvUtilization",
};

/** The load in a Prometheus text exposition; undefined unless it gives both running and waiting. */
export function parseLoadReport(text: string): LoadReport | undefined {
  // Prefixed and bare names may both appear (one build's collector beside another's): the prefixed one wins.
  const sums = new Map<string, number>();
  for (const line of text.split("\n")) {
    if (line === "" || line.startsWith("#")) continue;
    const end = nameEnd(line);
    const name = line.slice(0, end);
    if (NAMES[name] === undefined) continue;
    const value = Number(line.slice(line.lastIndexOf(" ") + 1));
    if (!Number.isFinite(value) || value < 0) continue;
    sums.set(name, (sums.get(name) ?? 0) + value);
  }
  const running = sums.get("trtllm_num_requests_running") ?? sums.get("num_requests_running");
  const waiting = sums.get("trtllm_num_requests_waiting") ?? sums.get("num_requests_waiting");
  if (running === undefined || waiting === undefined) return undefined;
  return { running, waiting, kvUtilization: sums.get("trtllm_kv_cache_utilization") };
}

function nameEnd(line: string): number {
  const brace = line.indexOf("{");
  const space = line.indexOf(" ");
  if (brace === -1) return space === -1 ? line.length : space;
  return space === -1 ? brace : Math.min(brace, space);
}

/** One bounded read of a worker's load; undefined when it reports none (any failure included). */
export async function fetchLoadReport(
  fetch: WorkerFetch,
  origin: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<LoadReport | undefined> {
  try {
    const response = await getFromWorker(fetch, origin, LOAD_REPORT_PATH, timeoutMs, signal);
    if (response === undefined) return undefined;
    return parseLoadReport(new TextDecoder().decode(await readBounded(response, MAX_LOAD_REPORT_BYTES)));
  } catch {
    return undefined;
  }
}
