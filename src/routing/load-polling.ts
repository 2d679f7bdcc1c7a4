/**
 * Reads every ready worker's own load report, one round every interval (a round waits for its
 * slowest answer, so a worker is asked at most once per interval), until stopped.
 */

import type { Placement } from "./placement.ts";
import { delay } from "../timers.ts";
import { fetchLoadReport } from "../workers/load-report.ts";
import type { WorkerFetch } from "../workers/transport.ts";

export async function pollWorkerLoads(
  placement: Placement,
  fetch: WorkerFetch,
  intervalMs: number,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<void> {
  const loads = placement.loads;
  if (loads === undefined || intervalMs <= 0) return;
  const { pool } = placement;
  while (!signal.aborted) {
    loads.retain(new Set(pool.origins()));
    loads.expire();
    // An origin ready in either role, once (a URL in both lists is one worker).
    const ready = new Set([...pool.ready("context"), ...pool.ready("generation")].map((entry) => entry.origin));
    await Promise.all(
      [...ready].map(async (origin) => {
        const report = await fetchLoadReport(fetch, origin, timeoutMs, signal);
        if (!signal.aborted) loads.record(origin, report);
      }),
    );
    if (signal.aborted) return;
    await delay(intervalMs, signal);
  }
}
