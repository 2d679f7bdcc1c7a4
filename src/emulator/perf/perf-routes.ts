/** The worker's clock and metrics routes: /steady_clock_offset (GET, POST) and GET /perf_metrics. */

import { isJsonObject, type JsonValue } from "../../json/json.ts";
import { pause } from "../../timers.ts";
import type { WorkerContext } from "../worker-context.ts";
import { detailResponse } from "../http/worker-error.ts";

/** trtllm-serve waits this long between its receive and transmit stamps. */
const DEFAULT_CLOCK_PROBE_DELAY_MS = 200;

/** GET: the worker's steady clock when the probe arrived and when it leaves. */
export async function steadyClockProbe(worker: WorkerContext, signal: AbortSignal): Promise<Response> {
  const receive = worker.perf.localNow();
  await pause(worker.options.clockProbeDelayMs ?? DEFAULT_CLOCK_PROBE_DELAY_MS, signal);
  return Response.json({ receive_ts: receive, transmit_ts: worker.perf.localNow() });
}

/** POST {"offset": seconds}: added to every timestamp this worker reports from now on. */
export function setSteadyClockOffset(worker: WorkerContext, body: JsonValue | undefined): Response {
  const offset = isJsonObject(body) ? body["offset"] : undefined;
  if (typeof offset !== "number" || !Number.isFinite(offset)) return detailResponse(422, "offset must be a number");
  worker.perf.offset = offset;
  return new Response(null, { status: 200 });
}

/** GET /perf_metrics: the finished requests' records since the last call. */
export function perfMetrics(worker: WorkerContext): Response {
  return new Response(JSON.stringify(worker.perf.take()), { headers: { "content-type": "application/json" } });
}
