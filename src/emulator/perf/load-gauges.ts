/**
 * GET /prometheus/metrics: the worker's load as trtllm-serve exposes it, Prometheus gauges set
 * from each iteration's stats (MetricsCollector.log_iteration_stats; tests/unittest/metrics/
 * test_collector.py @ 795ccdf7: num_requests_running = numActiveRequests, num_requests_waiting
 * = numQueuedRequests, kv_cache_utilization = usedNumBlocks / maxNumBlocks), under the
 * `trtllm_` names the Kubernetes inference gateway reads (GIE #2713) and labelled model_name.
 * A real worker sets them only with `enable_iter_perf_stats`; this one always does.
 */

import type { WorkerContext } from "../worker-context.ts";

export const PROMETHEUS_PATH = "/prometheus/metrics";

export function loadGauges(worker: WorkerContext): Response {
  const labels = `{model_name=${JSON.stringify(worker.model)},engine_type="trtllm"}`;
  const capacity = worker.options.kvCacheBlocks ?? 8192;
  const gauges: [string, string, number][] = [
    ["trtllm_num_requests_running", "Number of requests currently being processed.", worker.log.running()],
    ["trtllm_num_requests_waiting", "Number of requests waiting to be scheduled.", worker.options.reportedWaiting ?? 0],
    ["trtllm_kv_cache_utilization", "KV cache utilization", capacity > 0 ? worker.kvCache.usedBlocks / capacity : 0],
  ];
  const text = gauges.map(([name, help, value]) => `# HELP ${name} ${help}\n# TYPE ${name} gauge\n${name}${labels} ${value}\n`).join("");
  return new Response(text, { headers: { "content-type": "text/plain; version=0.0.4; charset=utf-8" } });
}
