import type { JsonValue } from "../json/json.ts";
import { getFromWorker, readJsonAnswer } from "./answers.ts";
import type { WorkerFetch } from "./transport.ts";

/** A worker's GET /perf_metrics (the records it hands over once), read within `maxBytes` as a model answer is; [] when it cannot be read. */
export async function fetchWorkerPerfMetrics(
  fetch: WorkerFetch,
  origin: string,
  timeoutMs: number,
  maxBytes: number,
): Promise<readonly JsonValue[]> {
  try {
    const response = await getFromWorker(fetch, origin, "/perf_metrics", timeoutMs);
    if (response === undefined) return [];
    const records = await readJsonAnswer(response, maxBytes);
    return Array.isArray(records) ? records : [];
  } catch {
    return [];
  }
}
