/** The generation side of the generation-first KV hand-off: long-poll the context worker. */

import { isJsonObject, parseJson } from "../../json/json.ts";
import type { KvHandoff } from "./kv-handoff.ts";
import { tokenIdList } from "../http/model-request.ts";
import { WorkerError } from "../http/worker-error.ts";

export const KV_HANDOFF_PATH = "/emulator/kv/";

/**
 * Waits until the context worker at `endpoint` finished the context phase of `disaggRequestId`.
 * Throws WorkerError(500) when the hand-off fails or times out; rethrows the abort when the
 * proxy gives up on the generation request first (the long poll is then aborted too).
 */
export async function fetchKvHandoff(
  endpoint: string,
  disaggRequestId: bigint,
  timeoutMs: number,
  signal: AbortSignal,
): Promise<KvHandoff> {
  const base = /^https?:\/\//.test(endpoint) ? endpoint : `http://${endpoint}`;
  const url = `${base.replace(/\/+$/, "")}${KV_HANDOFF_PATH}${disaggRequestId}`;
  let response: Response;
  try {
    response = await fetch(url, { signal: AbortSignal.any([signal, AbortSignal.timeout(timeoutMs)]) });
  } catch (error) {
    if (signal.aborted) throw error;
    const reason =
      error instanceof Error && error.name === "TimeoutError" ? `no context phase finished within ${timeoutMs} ms` : String(error);
    throw kvFailure(disaggRequestId, reason);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw kvFailure(disaggRequestId, `the context worker answered ${response.status}`);
  }
  return readHandoff(disaggRequestId, await response.text());
}

function readHandoff(disaggRequestId: bigint, text: string): KvHandoff {
  const body = parseJson(text);
  const first = isJsonObject(body) ? tokenIdList(body["first_gen_tokens"]) : undefined;
  const prompt = isJsonObject(body) ? tokenIdList(body["prompt_token_ids"]) : undefined;
  if (first === undefined || prompt === undefined) throw kvFailure(disaggRequestId, "the hand-off is malformed");
  return { firstGenTokens: first, promptTokenIds: prompt };
}

function kvFailure(disaggRequestId: bigint, reason: string): WorkerError {
  return new WorkerError(500, `KV cache transfer failed for disagg_request_id ${disaggRequestId}: ${reason}`);
}
