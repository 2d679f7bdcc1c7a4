/**
 * One model request's timeline as the engine would measure it: arrival, scheduling, each
 * token's iteration (forward and sample), the KV transfer of a generation phase, the first
 * token handed to the client. From it come the metrics headers (phase "server"), the trailing
 * `trtllm.perf_metrics` event, and the /perf_metrics record.
 */

import { jsonInteger, type JsonObject } from "../../json/json.ts";
import { perfMetricsEvent, serverPhaseHeaders, withinBudget, type StepTiming, type WireHeaders } from "./perf-wire.ts";
import type { ModelPhase } from "../http/model-request.ts";
import type { WorkerPerfState } from "./perf-state.ts";

/** Share of an iteration spent in the forward pass; the rest is sampling. GPU time is 80% of each. */
const FORWARD_SHARE = 0.9;
const GPU_SHARE = 0.8;
/** Bytes of KV cache per prompt token a transfer is said to move. */
const KV_BYTES_PER_TOKEN = 2048;

export interface KvFacts {
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly tokensPerBlock: number;
}

export class JobTimeline {
  /** The request carried `X-TRTLLM-return-metrics: 1`. */
  readonly requested: boolean;
  readonly #state: WorkerPerfState;
  readonly #serverArrival: number;
  #arrival: number;
  #scheduled: number | undefined;
  #firstToken: number | undefined;
  #lastToken: number | undefined;
  #serverFirstToken: number | undefined;
  #kv: { start: number; end: number | undefined } | undefined;
  #kvFacts: KvFacts | undefined;
  readonly #steps: StepTiming[] = [];
  #firstIteration: number | undefined;

  constructor(state: WorkerPerfState, requested: boolean) {
    this.#state = state;
    this.requested = requested;
    this.#serverArrival = state.now();
    this.#arrival = this.#serverArrival;
  }

  markArrival(): void {
    this.#arrival = this.#state.now();
  }

  markScheduled(): void {
    this.#scheduled ??= this.#state.now();
  }

  kvTransferStarted(): void {
    this.#kv = { start: this.#state.now(), end: undefined };
  }

  kvTransferEnded(): void {
    if (this.#kv !== undefined) this.#kv.end ??= this.#state.now();
  }

  setKvFacts(facts: KvFacts): void {
    this.#kvFacts = facts;
  }

  /** One output token: its iteration ran from the previous one (or the scheduling) to now. */
  markToken(): void {
    const now = this.#state.now();
    const start = this.#lastToken ?? this.#scheduled ?? now;
    const split = start + (now - start) * FORWARD_SHARE;
    const iter = this.#state.nextIteration();
    this.#firstIteration ??= iter;
    this.#steps.push({
      iter,
      forward_start_time: start,
      forward_end_time: split,
      sample_start_time: split,
      sample_end_time: now,
      gpu_forward_time: (split - start) * 1000 * GPU_SHARE,
      gpu_sample_time: (now - split) * 1000 * GPU_SHARE,
    });
    this.#firstToken ??= now;
    this.#lastToken = now;
  }

  markServerFirstToken(): void {
    this.#serverFirstToken ??= this.#state.now();
  }

  /** The metrics headers of the phase, whole (the caller applies the budget where upstream does). */
  headers(phase: ModelPhase): WireHeaders {
    const kv = phase === "generation" ? this.#kv : undefined;
    const prefill = phase === "generation" ? [] : this.#prefillChunk();
    const timing = {
      arrival: this.#arrival,
      scheduled: this.#scheduled,
      firstToken: this.#firstToken,
      lastToken: this.#lastToken,
      kvStart: kv?.start,
      kvEnd: kv?.end,
    };
    return serverPhaseHeaders(timing, this.#steps, prefill);
  }

  /** Headers for a non-streamed answer (within the budget). */
  responseHeaders(phase: ModelPhase): WireHeaders {
    return withinBudget(this.headers(phase));
  }

  /** The event after a stream's last frame. */
  streamEvent(phase: ModelPhase): Uint8Array | undefined {
    return perfMetricsEvent(this.headers(phase));
  }

  /** The GET /perf_metrics record, as trtllm-serve's worker lists it. */
  record(phase: ModelPhase, requestId: bigint, ctxRequestId: bigint | undefined): JsonObject {
    const timing: JsonObject = {
      server_arrival_time: this.#serverArrival,
      arrival_time: this.#arrival,
      first_scheduled_time: this.#scheduled ?? null,
      first_token_time: this.#firstToken ?? null,
      server_first_token_time: this.#serverFirstToken ?? null,
      last_token_time: this.#lastToken ?? null,
    };
    const facts = this.#kvFacts ?? { promptTokens: 0, cachedTokens: 0, tokensPerBlock: 32 };
    if (phase === "generation" && this.#kv?.end !== undefined) {
      Object.assign(timing, {
        kv_cache_size: facts.promptTokens * KV_BYTES_PER_TOKEN,
        kv_cache_transfer_start: this.#kv.start,
        kv_cache_transfer_end: this.#kv.end,
      });
    }
    const total = Math.ceil(facts.promptTokens / facts.tokensPerBlock);
    const reused = Math.min(total, Math.floor(facts.cachedTokens / facts.tokensPerBlock));
    const record: JsonObject = {
      request_id: jsonInteger(requestId),
      perf_metrics: {
        first_iter: this.#firstIteration ?? null,
        last_iter: this.#steps.at(-1)?.iter ?? null,
        timing_metrics: timing,
        kv_cache_metrics: {
          num_total_allocated_blocks: total,
          num_new_allocated_blocks: total - reused,
          num_reused_blocks: reused,
          num_missed_blocks: total - reused,
        },
      },
    };
    if (ctxRequestId !== undefined) record["ctx_request_id"] = jsonInteger(ctxRequestId);
    return record;
  }

  /** The prefill as one context chunk: from scheduling to the first token. */
  #prefillChunk(): StepTiming[] {
    const start = this.#scheduled;
    const end = this.#firstToken;
    if (start === undefined || end === undefined) return [];
    const split = start + (end - start) * FORWARD_SHARE;
    return [
      {
        forward_start_time: start,
        forward_end_time: split,
        sample_start_time: split,
        sample_end_time: end,
        gpu_forward_time: (split - start) * 1000 * GPU_SHARE,
        gpu_sample_time: (end - split) * 1000 * GPU_SHARE,
      },
    ];
  }
}
