import type { Deadlines } from "../deadline-wheel.ts";
import type { FirstRead } from "../bytes.ts";
import type { ProxyConfig } from "../config/types.ts";
import type { JsonObject } from "../json/json.ts";
import type { JsonSource } from "../json/json-source.ts";
import type { Logger } from "../observability/logger.ts";
import type { DisaggIdAllocator } from "../request/disagg-id.ts";
import type { Placement } from "../routing/placement.ts";
import type { RoutingRequest } from "../routing/routing-request.ts";
import type { Affinity } from "./affinity.ts";
import type { BodyCodec } from "../workers/body-codec.ts";
import type { WorkerFetch } from "../workers/transport.ts";
import type { HandoffSettler } from "./handoff/settler.ts";

export { WORKER_PATH, type ApiKind } from "./api-kind.ts";
import type { ApiKind } from "./api-kind.ts";

/** The worker's name for a request it served alone; the proxy's replies carry the id they ran under. */
export const ENGINE_REQUEST_ID_HEADER = "x-trtllm-engine-request-id";

/** A validated client request in the worker's own dialect. */
export interface PipelineInput {
  readonly api: ApiKind;
  readonly body: JsonObject;
  /** The client's body bytes `body` was parsed from: unchanged members reach workers as those bytes. */
  readonly source?: JsonSource | undefined;
  readonly stream: boolean;
  /** What the routers may know of the request (prompt text, token ids, conversation). */
  readonly routing: RoutingRequest;
  /** Sub-agent affinity, sent as signed headers to the context leg (and the generation leg with scope "both"). */
  readonly affinity?: Affinity | undefined;
}

/**
 * What the pipeline hands back; failures are thrown as ProxyError. A non-streamed request gets
 * "json"; a streamed one gets the generation worker's "stream", or "finished" when the context
 * phase finished it (EOS, stop, max tokens 1): its final answer, which the route's dialect
 * replays as the stream a worker would have sent.
 */
export type PipelineOutcome =
  | {
      readonly kind: "json";
      readonly body: JsonObject;
      /** The generation worker's answer as it came, when it is the client's answer unchanged (not one the context phase finished). */
      readonly bytes?: Uint8Array;
    }
  | { readonly kind: "stream"; readonly body: ReadableStream<Uint8Array>; readonly first?: undefined }
  | {
      readonly kind: "stream";
      readonly body?: undefined;
      /** Its first read, already made (the pipeline waited for the worker's first bytes), and its reader. */
      readonly first: FirstRead;
    }
  | { readonly kind: "finished"; readonly body: JsonObject };

/**
 * What the pipeline reads of the configuration, each with its flag's default (config/types.ts
 * DEFAULTS, docs/configuration.md): schedule context_first, maxRetries 1, retryDelayMs 1000,
 * requestTimeoutMs 180000, firstTokenTimeoutMs 0 (the request timeout alone), maxAnswerBytes
 * 64 MiB, internalAuthKey and conditionalDisagg none, genStripMessageHistory, genTokidsCtxbytes
 * and benchmarkGenerationOnly false, subagentAffinityScope "context", responsesFallback "error",
 * streamStartWaitMs 1000 (an overload is not retried past it: retry.ts).
 */
export type PipelineSettings = Pick<
  ProxyConfig,
  | "schedule"
  | "maxRetries"
  | "retryDelayMs"
  | "requestTimeoutMs"
  | "firstTokenTimeoutMs"
  | "maxAnswerBytes"
  | "internalAuthKey"
  | "conditionalDisagg"
  | "genStripMessageHistory"
  | "genTokidsCtxbytes"
  | "benchmarkGenerationOnly"
  | "subagentAffinityScope"
  | "responsesFallback"
  | "streamStartWaitMs"
>;

export interface PipelineDeps {
  readonly settings: PipelineSettings;
  readonly placement: Placement;
  readonly ids: DisaggIdAllocator;
  readonly logger: Logger;
  readonly workerFetch: WorkerFetch;
  /** How worker-bound bodies are encoded (default JSON; --worker-msgpack: msgpack). */
  readonly bodyCodec?: BodyCodec;
  /** Claims the hand-offs of requests that ended before their generation leg did (none: left to the workers' timeout). */
  readonly handoffs?: HandoffSettler | undefined;
  /** The worker calls' deadlines, on one timer (none: a timer per call). */
  readonly deadlines?: Deadlines | undefined;
}
