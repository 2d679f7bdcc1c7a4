import { parseJson, type JsonValue } from "../json.ts";
import type { WorkerFetch } from "./transport.ts";

/** A worker's GET /perf_metrics (the records it hands over once); [] when it cannot be read. */
export async function fetchWorkerPerfMetrics(fetch: WorkerFetch, origin: string, timeoutMs: number): Promise<readonly JsonValue[]> {
  try {
    const response = await fetch(`${origin}/perf_metrics`, { signal: AbortSignal.timeout(timeoutMs) });
    if (!response.ok) {
      await response.body?.cancel();
      return [];
    }
    const records = parseJson(await response.text());
    return Array.isArray(records) ? records : [];
  } catch {
    return [];
  }
}
