/** A worker's served model ids, read from its GET /v1/models when it joins. */

import { isJsonObject } from "../json/json.ts";
import { getFromWorker, readJsonAnswer } from "./answers.ts";
import { MAX_MODELS_PER_WORKER } from "./worker-pool.ts";
import type { WorkerFetch } from "./transport.ts";

/** A model list is a few hundred bytes; more than this is not one. */
export const MAX_MODEL_LIST_BYTES = 256 * 1024;
/** Longer ids are not names (they would reach metric labels and /cluster_info): skipped. */
export const MAX_MODEL_ID_LENGTH = 256;

/**
 * The ids of `{"object": "list", "data": [{"id": …}, …]}` (tensorrt_llm/serve/openai_server.py
 * get_model: one entry, the served model's name); undefined when the worker does not answer
 * one (an older build, a failure): its model stays what it was, or unknown.
 */
export async function fetchServedModels(
  fetch: WorkerFetch,
  origin: string,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<string[] | undefined> {
  try {
    const response = await getFromWorker(fetch, origin, "/v1/models", timeoutMs, signal);
    if (response === undefined) return undefined;
    // Size, then shape (depth, values) as the bytes arrive, then parse: as every worker answer.
    const answer = await readJsonAnswer(response, MAX_MODEL_LIST_BYTES);
    const data = isJsonObject(answer) ? answer["data"] : undefined;
    if (!Array.isArray(data)) return undefined;
    const ids = data.flatMap((item) =>
      isJsonObject(item) && typeof item["id"] === "string" && item["id"] !== "" && item["id"].length <= MAX_MODEL_ID_LENGTH
        ? [item["id"]]
        : [],
    );
    return ids.length === 0 ? undefined : ids.slice(0, MAX_MODELS_PER_WORKER);
  } catch {
    return undefined;
  }
}
