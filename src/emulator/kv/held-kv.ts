/**
 * The context side of a context-first hand-off, as TensorRT-LLM's cache transceiver keeps it.
 *
 * A context_only request whose generation must continue does not free its KV when it answers:
 * "Context phase completes computation, KV cache stays in device memory awaiting transmission
 * … Generation phase resumes computation, context releases KV cache"
 * (docs/source/developer-guide/kv-transfer.md @ 44d3172a02801cbc4daaf23b2ac430240001ed24,
 * Workflow steps 1-6). The only other way out is `cache_transceiver_config.kv_transfer_timeout_ms`
 * (tensorrt_llm/llmapi/llm_args.py, CacheTransceiverConfig, read_file id 1090804222: default
 * None, "Requests exceeding this timeout will be cancelled"); with none set the executor's
 * timeout check returns at once and the blocks are held for good
 * (tensorrt_llm/_torch/pyexecutor/py_executor.py `_check_kv_transfer_timeout`, read_file id
 * 736889464: `if timeout_ms is None: return`). Aborting the context request after it answered
 * changes nothing: its KV is committed (TRTLLM_DISAGG_ENABLE_INFLIGHT_CANCEL, default off, only
 * cancels transfers in flight, and only on the C++ NIXL/UCX path; read_file id 70080037728
 * `inflight_cancel_active`).
 *
 * So here: a finished context-first hand-off is held under its ctx_request_id until a
 * generation_only request names it (the generation worker claims it from the context worker
 * named in its opaque state, as the transceiver requests the KV) or the timeout passes.
 */

export class HeldKv {
  readonly #held = new Map<string, { readonly blocks: number; readonly timer: ReturnType<typeof setTimeout> | undefined }>();
  readonly #timeoutMs: number | undefined;
  #timedOut = 0;

  /** `timeoutMs`: kv_transfer_timeout_ms; undefined holds every hand-off until it is claimed. */
  constructor(timeoutMs: number | undefined) {
    this.#timeoutMs = timeoutMs;
  }

  /** Hand-offs held now. */
  get size(): number {
    return this.#held.size;
  }

  /** KV blocks the held hand-offs occupy. */
  get blocks(): number {
    let total = 0;
    for (const entry of this.#held.values()) total += entry.blocks;
    return total;
  }

  /** Hand-offs released by the timeout rather than by a generation request. */
  get timedOut(): number {
    return this.#timedOut;
  }

  hold(ctxRequestId: string, blocks: number): void {
    this.#release(ctxRequestId);
    const timer = this.#timeoutMs === undefined ? undefined : setTimeout(() => this.#expire(ctxRequestId), this.#timeoutMs);
    this.#held.set(ctxRequestId, { blocks, timer });
  }

  /** A generation request pulls the KV: true when it was held (and is released now). */
  claim(ctxRequestId: string): boolean {
    return this.#release(ctxRequestId);
  }

  /** The worker stops: nothing is held any more. */
  close(): void {
    for (const entry of this.#held.values()) clearTimeout(entry.timer);
    this.#held.clear();
  }

  #expire(ctxRequestId: string): void {
    if (this.#release(ctxRequestId)) this.#timedOut++;
  }

  #release(ctxRequestId: string): boolean {
    const entry = this.#held.get(ctxRequestId);
    if (entry === undefined) return false;
    clearTimeout(entry.timer);
    this.#held.delete(ctxRequestId);
    return true;
  }
}
