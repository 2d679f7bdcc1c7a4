/** Public types of the emulated trtllm-serve worker. Everything else in src/emulator is private. */

import type { JsonValue } from "../json/json.ts";

/** `mixed` serves both phases (a URL listed as a context and as a generation server). */
export type WorkerRole = "context" | "generation" | "mixed";

/** Worker-wide fault defaults; `[[emu …]]` prompt directives override them per request. */
export interface EmulatorFaults {
  /** Answer this HTTP error status (after rejectAfterMs) instead of serving the request. */
  rejectStatus?: number;
  rejectAfterMs?: number;
  /** Close the connection abruptly after N tokens (no [DONE], no terminal event). */
  cutAfterTokens?: number;
  /** Deliver every reply body in pieces of N bytes, re-split regardless of event boundaries. */
  chunkBytes?: number;
  /** Go silent for silenceMs after silenceAfterTokens tokens (default: after 1 token). */
  silenceMs?: number;
  silenceAfterTokens?: number;
  /** Emit an in-band error event after N tokens, then end the stream. */
  errorEventAfterTokens?: number;
  /**
   * Close a kept-alive connection this long after its last response completed unless another
   * request began, as uvicorn's timeout_keep_alive does (trtllm-serve: 5 s). Default: Bun's own.
   */
  keepAliveTimeoutMs?: number;
  /** Reset the next request of every kept-alive connection before reading it (default false). */
  resetKeptAlive?: boolean;
  /** Forward the next request of every kept-alive connection whole, then reset the client's side this many ms later, before any answer byte (a middlebox's reset). */
  resetKeptAliveAfterMs?: number;
}

export interface EmulatorOptions {
  role: WorkerRole;
  /** Default 127.0.0.1. */
  host?: string;
  /** Default 0: the OS picks a free port. */
  port?: number;
  /** Default "emulated-model". */
  model?: string;
  /** Requests /prometheus/metrics reports waiting in its queue, besides what it runs (default 0): a worker whose queue is deep. */
  reportedWaiting?: number;
  /** Fixed prefill latency in ms (default 0). */
  prefillMs?: number;
  /** Extra prefill latency per prompt token not already in the KV cache, in ms (default 0). */
  prefillMsPerToken?: number;
  /** Latency per output token after the first, in ms (default 0). */
  tokenMs?: number;
  /** Output tokens when neither the request nor a directive limits them (default 16). */
  outputTokens?: number;
  /**
   * The longest prompt in tokens the worker takes (trtllm-serve's max_seq_len): a context or
   * aggregated request with a longer one is refused as upstream refuses it (default: no bound).
   */
  maxSeqLen?: number;
  /** KV cache block size in prompt tokens (default 32, TensorRT-LLM's). */
  tokensPerBlock?: number;
  /** One prompt token per this many bytes of prompt text (default: one per whitespace-separated word). */
  bytesPerToken?: number;
  /** KV cache capacity in blocks, least recently used evicted first (default 8192; 0: no prefix cache). */
  kvCacheBlocks?: number;
  /** KV cache events kept for POST /kv_cache_events between two calls (default 4096). */
  kvEventBuffer?: number;
  /** The worker's own response.in_progress repeat on a silent Responses stream (default 15000). */
  responsesKeepaliveMs?: number;
  /** How long a generation-first request waits for its KV hand-off (default 60000). */
  kvWaitTimeoutMs?: number;
  /**
   * cache_transceiver_config.kv_transfer_timeout_ms: how long a context-first hand-off's KV is
   * held for a generation request to pull it (default: none, held until pulled, as upstream).
   */
  kvTransferTimeoutMs?: number;
  faults?: EmulatorFaults;
  /**
   * Start-up: for this long every route answers 503 `starting` with `x-trtllm-server-state:
   * starting`, as trtllm-serve does while its model loads (readiness.py); Infinity until
   * `finishStarting()`. Default: ready at once.
   */
  startingMs?: number;
  /**
   * The trtllm-serve release played (GET /version, accepted request fields): 1.3.0rc14 (before
   * ctx_usage), 1.3.0rc18 (with it), 1.3.0rc28 (Responses disaggregation) or 1.4.0rc0 (newest, the default); see protocol-generation.ts.
   */
  protocolVersion?: string;
  /** Keep each reply body's bytes on its record (`sent`), for byte-exact relay tests (default false). */
  recordReplies?: boolean;
  /** Keep only the newest N request records, so a long run (the soak benchmark) stays bounded (default: all). */
  maxRecords?: number;
  /**
   * Announces the worker from start until stop, once per role it serves (e.g. in etcd, as
   * TensorRT-LLM's disagg_cluster workers do). Injected: the emulator knows no registry.
   */
  register?: Registrar;
  /** Finished requests' records GET /perf_metrics keeps (default 0: none, as trtllm-serve's default). */
  perfMetricsMaxRequests?: number;
  /**
   * trtllm-serve's internal_request_auth_key: with it the worker checks the proxy's
   * x-trtllm-disagg-auth and sub-agent affinity signatures as upstream's do (internal-auth.ts).
   */
  internalAuthKey?: string;
  /** Seconds added to this worker's steady clock, as if it ran on another host (default 0). */
  clockSkewS?: number;
  /** Pause between the receive and transmit stamps of GET /steady_clock_offset (default 200, as trtllm-serve). */
  clockProbeDelayMs?: number;
}

/** One phase a worker serves; a mixed worker serves both. */
export type PhaseRole = Exclude<WorkerRole, "mixed">;

/** Registers a listening worker; `stop` withdraws it. */
export type Registrar = (worker: { readonly role: PhaseRole; readonly host: string; readonly port: number }) => { stop(): Promise<void> };

export type RequestPhase = "context" | "generation" | "aggregated" | "other";
export type RequestStatus = "running" | "finished" | "aborted";

export interface RecordedRequest {
  /** Arrival order on this worker, from 0. */
  readonly seq: number;
  readonly method: string;
  readonly path: string;
  /** Lower-case header names. */
  readonly headers: Record<string, string>;
  /** The JSON body, parsed losslessly (63-bit integers stay exact); undefined without a JSON body. */
  readonly body: JsonValue | undefined;
  readonly phase: RequestPhase;
  readonly disaggRequestId: bigint | undefined;
  /** `aborted`: the worker saw its client connection close before it finished. */
  status: RequestStatus;
  /** The reply body as it left, piece by piece; filled only with `recordReplies`. */
  readonly sent: Uint8Array[];
}

export interface EmulatedWorker {
  readonly url: string;
  readonly port: number;
  readonly role: WorkerRole;
  readonly requests: readonly RecordedRequest[];
  /** Resolves with the first recorded request (past or future) matching the predicate; rejects after timeoutMs (default 5000). */
  waitFor(predicate: (r: RecordedRequest) => boolean, timeoutMs?: number): Promise<RecordedRequest>;
  /** Number of model requests still running (for leak checks). */
  running(): number;
  /** The most model requests that ran at once since the start. */
  peakRunning(): number;
  /** Context-first hand-offs whose KV no generation request has pulled yet (GET /metrics reports it too). */
  heldKvHandoffs(): number;
  /** What the connection faults did: connections accepted, idle ones closed, kept-alive requests reset. */
  connectionFaults(): { readonly opened: number; readonly idleClosed: number; readonly resets: number };
  /** Closes the listener and open connections. */
  /** Leaves the etcd cluster but keeps serving, as a worker draining before shutdown does. */
  deregister(): Promise<void>;
  /** Ends the start-up state now (see `startingMs`). */
  finishStarting(): void;
  /** Enters the start-up state again, as a worker restarted on its port does, until `finishStarting()`. */
  restartInPlace(): void;
  /** Begins a drain (upstream's RequestTracker.start_drain): new model requests answer 503 "TensorRT-LLM is draining"; those running finish. */
  startDraining(): void;
  stop(): Promise<void>;
  [Symbol.asyncDispose](): Promise<void>;
}
