/**
 * The generation side of a context-first hand-off: before its first token a generation_only
 * request pulls its KV from the context worker named in the opaque state, which releases it
 * there (held-kv.ts). A context worker that holds nothing under that id (timed out, restarted,
 * claimed already) fails the request, as a real KV transfer would.
 */

import { WorkerError } from "../http/worker-error.ts";

export const KV_CLAIM_PATH = "/emulator/kv-claim/";

export async function claimHeldKv(contextWorker: string, ctxRequestId: bigint, signal: AbortSignal): Promise<void> {
  const url = `${contextWorker.replace(/\/+$/, "")}${KV_CLAIM_PATH}${ctxRequestId}`;
  let response: Response;
  try {
    // A connection of its own: the context worker's connection faults are for the proxy's requests.
    response = await fetch(url, { method: "POST", signal, keepalive: false });
  } catch (error) {
    if (signal.aborted) throw error;
    throw claimFailure(ctxRequestId, `the context worker is unreachable (${String(error)})`);
  }
  await response.body?.cancel();
  if (!response.ok) throw claimFailure(ctxRequestId, `the context worker holds no KV for it (${response.status})`);
}

function claimFailure(ctxRequestId: bigint, reason: string): WorkerError {
  return new WorkerError(500, `KV cache transfer failed for ctx_request_id ${ctxRequestId}: ${reason}`);
}
