/** The worker's non-model routes: health, identity, token counting, KV cache events and the KV hand-off poll. */

import { jsonInteger, type JsonValue } from "../../json/json.ts";
import { KV_HANDOFF_PATH } from "../kv/kv-fetch.ts";
import { countTokensText } from "../engine/prompt-text.ts";
import { tokenize } from "../engine/tokenizer.ts";
import type { WorkerContext } from "../worker-context.ts";
import type { WorkerGeneration } from "../engine/protocol-generation.ts";
import { detailResponse, errorResponse, WorkerError } from "./worker-error.ts";

export function health(): Response {
  return new Response(null, { status: 200 });
}

/** As a real worker reports it: ctx_info_endpoint is a list (the proxy takes its first element). */
export function serverInfo(worker: WorkerContext): Response {
  return Response.json({
    disaggregated_params: { ctx_info_endpoint: [worker.url], ctx_dp_rank: 0 },
    role: worker.options.role,
    model: worker.model,
    kv_cache_hash_algo: "v1_block_key",
  });
}

/** POST /kv_cache_events: the KV cache events since the last call (block hashes are 64-bit integers). */
export function kvCacheEvents(worker: WorkerContext): Response {
  return new Response(JSON.stringify(worker.kvCache.takeEvents()), { headers: { "content-type": "application/json" } });
}

export function models(worker: WorkerContext, startedAt: number): Response {
  return Response.json({
    object: "list",
    data: [{ id: worker.model, object: "model", created: startedAt, owned_by: "tensorrt_llm" }],
  });
}

/** GET /version as trtllm-serve answers it (openai_server.py): {"version": tensorrt_llm.__version__}. */
export function version(generation: WorkerGeneration): Response {
  return Response.json({ version: generation.version });
}

/** Anthropic-shaped (system + messages) or chat-shaped body → `{"input_tokens": n}`. */
export function countTokens(body: JsonValue | undefined): Response {
  if (body === undefined) return errorResponse(new WorkerError(400, "Cannot parse the request body as JSON"));
  return Response.json({ input_tokens: tokenize(countTokensText(body)).length });
}

/** Long-poll for a generation-first KV hand-off; answers once the context phase settled. */
export async function kvHandoff(worker: WorkerContext, req: Request, path: string): Promise<Response> {
  const id = path.slice(KV_HANDOFF_PATH.length);
  if (!/^\d+$/.test(id)) return detailResponse(404, "Not Found");
  const handoff = await worker.handoffs.take(id, req.signal);
  if (handoff === undefined) return detailResponse(404, `No KV cache for disagg_request_id ${id}`);
  return new Response(
    JSON.stringify({
      disagg_request_id: jsonInteger(BigInt(id)),
      first_gen_tokens: handoff.firstGenTokens,
      prompt_token_ids: handoff.promptTokenIds,
    }),
    { headers: { "content-type": "application/json" } },
  );
}

/** POST /emulator/kv-claim/<ctx_request_id>: a generation worker pulls a held hand-off's KV (kv-claim.ts). */
export function kvClaim(worker: WorkerContext, id: string): Response {
  if (!/^\d+$/.test(id) || !worker.heldKv.claim(id)) return detailResponse(404, `No KV cache held for ctx_request_id ${id}`);
  return new Response(null, { status: 200 });
}

/**
 * GET /metrics as trtllm-serve answers it: a JSON list of iteration statistics
 * (docs/source/commands/trtllm-serve.rst, "Metrics Endpoint", read_file id 2469758945), here
 * one entry for now. `kvCacheStats.usedNumBlocks` counts the blocks held for hand-offs no
 * generation request pulled; `heldKvHandoffs` (this emulator's own field) counts those
 * hand-offs, and `timedOutKvHandoffs` the ones kv_transfer_timeout_ms released.
 */
export function iterationStats(worker: WorkerContext): Response {
  const held = worker.heldKv;
  return Response.json([
    {
      iter: worker.perf.iteration(),
      numActiveRequests: worker.log.running(),
      numQueuedRequests: worker.options.reportedWaiting ?? 0,
      kvCacheStats: { usedNumBlocks: held.blocks, tokensPerBlock: worker.options.tokensPerBlock ?? 32 },
      heldKvHandoffs: held.size,
      timedOutKvHandoffs: held.timedOut,
    },
  ]);
}
