/**
 * The emulated trtllm-serve worker: the stand-in every test, the demo and the benchmarks run on.
 *
 * On the wire it behaves as a context, generation or mixed trtllm-serve worker: /health,
 * /server_info, /v1/models, /version, /v1/messages/count_tokens, /kv_cache_events, and the three
 * model routes (/v1/completions, /v1/chat/completions, /v1/responses) in their aggregated,
 * context_only and generation_only forms, with the worker's error envelope `{"object":"error",…}`.
 *
 * Model: one token per whitespace-separated prompt word (id = 1000 + FNV-1a(word) mod 30000);
 * output token i is the word " tok<i>" (reasoning " think<i>"), 16 by default.
 *
 * KV cache (kv-cache.ts): each worker caches the full blocks (tokensPerBlock, default 32) of the
 * prompts it served, named by TensorRT-LLM's chained `v1_block_key` hashes, LRU-bounded
 * (kvCacheBlocks). The prefill is charged only for the uncached tokens, usage reports the cached
 * part as prompt_tokens_details.cached_tokens, and `POST /kv_cache_events` answers the
 * `created`/`stored`/`removed` events since the last call, as trtllm-serve does. `GET
 * /emulator/prefill` (prefill-tally.ts, this emulator's own) counts the prompt and cached tokens
 * of the prefills so far, per phase, for benchmarks.
 *
 * Per-request directives in the prompt text, `[[emu key=value …]]` (see directives.ts):
 * prefill_ms, queue_ms, token_ms, tokens, finish=stop, reject, reject_after_ms, cut, chunk, silence_ms,
 * silence_after, error_event, tools, reasoning, cached; prefix `ctx.` or `gen.` to scope a key
 * to the context phase or to the generation/aggregated phase.
 *
 * Responses in disaggregated form (this emulator's convention; upstream does not define it):
 * the context_only answer is a response object, status "incomplete" (incomplete_details
 * {reason:"max_output_tokens"}) when generation must continue or "completed" when it finished
 * in prefill, with top-level `disaggregated_params` and `prompt_token_ids`; the generation_only
 * request carries `disaggregated_params` and `prompt_token_ids` at its top level too.
 *
 * Generation first: the generation worker long-polls `GET <ctx_info_endpoint>/emulator/kv/<id>`
 * on the context worker until that id's context phase finished (404 when it failed).
 *
 * Context first (held-kv.ts): a context worker holds each finished hand-off's KV until a
 * generation_only request pulls it (`POST <context worker>/emulator/kv-claim/<ctx_request_id>`,
 * before its first token; a miss fails it with a KV-transfer 500) or `kvTransferTimeoutMs`
 * passes (none: held for good, as upstream). `GET /metrics` answers trtllm-serve's list of
 * iteration stats with `heldKvHandoffs` and the blocks they hold.
 *
 * Connection faults (connection-faults.ts), worker-wide: `keepAliveTimeoutMs` closes idle
 * kept-alive connections as uvicorn's timeout_keep_alive does; `resetKeptAlive` resets the next
 * request of every kept-alive connection unread.
 */

export { emulatorOptions, type EmulatorFlags } from "./cli.ts";
export { startEmulatedWorker } from "./worker.ts";
export type {
  EmulatedWorker,
  EmulatorFaults,
  EmulatorOptions,
  PhaseRole,
  Registrar,
  RecordedRequest,
  RequestPhase,
  RequestStatus,
  WorkerRole,
} from "./types.ts";
