/** What every request handler of one emulated worker shares, and one model request's handle. */

import type { KvBlockCache } from "./kv/kv-cache.ts";
import type { HeldKv } from "./kv/held-kv.ts";
import type { KvHandoffTable } from "./kv/kv-handoff.ts";
import type { ModelRequest } from "./http/model-request.ts";
import type { WorkerPerfState } from "./perf/perf-state.ts";
import type { JobTimeline } from "./perf/perf-timeline.ts";
import type { PrefillTally } from "./perf/prefill-tally.ts";
import type { WorkerGeneration } from "./engine/protocol-generation.ts";
import type { RequestLog } from "./http/request-log.ts";
import type { EmulatorOptions, RecordedRequest } from "./types.ts";

export interface WorkerContext {
  readonly options: EmulatorOptions;
  /** `http://host:port`, no trailing slash: what /server_info and ctx_info_endpoint report. */
  readonly url: string;
  readonly model: string;
  readonly log: RequestLog;
  readonly handoffs: KvHandoffTable;
  /** Context-first hand-offs whose KV no generation request has pulled yet. */
  readonly heldKv: HeldKv;
  /** Prompt prefixes in the KV cache, and their events for /kv_cache_events. */
  readonly kvCache: KvBlockCache;
  /** Prefilled and cached prompt tokens so far, for GET /emulator/prefill. */
  readonly prefill: PrefillTally;
  /** Steady clock, its offset from the proxy, iteration counter and /perf_metrics records. */
  readonly perf: WorkerPerfState;
  /** The trtllm-serve release this worker plays: which request fields it accepts. */
  readonly generation: WorkerGeneration;
  /** A request id below 2^40, the range real workers keep for their local ids. */
  nextLocalId(): bigint;
}

export interface Job {
  readonly worker: WorkerContext;
  readonly request: ModelRequest;
  readonly record: RecordedRequest;
  /** Aborted when the client leaves or the worker stops: every wait of the request ends. */
  readonly signal: AbortSignal;
  /** The reply was delivered (or deliberately broken off): marks the request finished. */
  readonly finish: () => void;
  /** The reader cancelled the reply: marks the request aborted and stops its work. */
  readonly cancel: () => void;
  /** disagg_request_id when the proxy sent one, else the local id. */
  readonly engineRequestId: bigint;
  /** What the engine measured of this request (per-request perf metrics). */
  readonly perf: JobTimeline;
}
