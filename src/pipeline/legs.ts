import type { ReadableStreamReadResult } from "node:stream/web";
import type { ByteReader } from "../bytes.ts";
import { asProxyError, ProxyError } from "../errors.ts";
import type { JsonObject } from "../json/json.ts";
import type { KeptList } from "../json/json-bytes.ts";
import type { JsonSource } from "../json/json-source.ts";
import { disaggAuthOf } from "../security/disagg-auth.ts";
import type { RequestContext } from "../request/context.ts";
import type { Placed } from "../routing/placement.ts";
import { JSON_CODEC } from "../workers/body-codec.ts";
import type { WorkerStream } from "../workers/stream-call.ts";
import type { RoutingRequest } from "../routing/routing-request.ts";
import type { HandoffWatch } from "./handoff/watch.ts";
import type { LegPlan, StreamedAttempt } from "./leg-plan.ts";
import { runJsonLeg, runStreamLeg } from "./leg-runner.ts";
import { contextLegRetryable, generationLegRetryable, restartable } from "./retry.ts";
import { withDeadline } from "../timers.ts";
import type { Deadlines } from "../deadline-wheel.ts";
import { WORKER_PATH, type PipelineDeps, type PipelineInput, type PipelineOutcome } from "./types.ts";

export interface ContextLegResult {
  readonly answer: JsonObject;
  readonly origin: string;
  /** The disagg_request_id of the attempt that answered. */
  readonly sentId: bigint;
  /** The answer's `prompt_token_ids` kept as their bytes (the answer reads null there), when long. */
  readonly keptTokenIds: KeptList | undefined;
}

export async function runContextLeg(
  deps: PipelineDeps,
  ctx: RequestContext,
  input: PipelineInput,
  options: {
    exclude?: string;
    first?: Placed;
    pinned?: boolean;
    signal?: AbortSignal;
    body: (id: bigint) => JsonObject;
    handoff?: HandoffWatch | undefined;
    id?: bigint;
  },
): Promise<ContextLegResult> {
  const codec = deps.bodyCodec ?? JSON_CODEC;
  ctx.perf?.markContextDispatch();
  const pinned = options.pinned ?? false;
  const answered = await runJsonLeg(deps, ctx, {
    role: "context",
    path: WORKER_PATH[input.api],
    workers: {
      exclude: options.exclude,
      first: options.first,
      pinned,
      requires: input.api === "responses" ? "responses_disaggregation" : undefined,
    },
    routing: input.routing,
    signal: options.signal ?? ctx.signal,
    retryable: contextLegRetryable,
    headers: codec.headers,
    // A context retry gets a fresh id, unless it is pinned (generation-first: the hand-off names the id).
    id: options.id ?? ctx.disaggRequestId,
    freshIdOnRetry: !pinned,
    body: { of: options.body, codec, source: input.source },
    affinity: input.affinity,
    handoff: options.handoff,
  });
  ctx.legServed("context", answered.origin);
  ctx.perf?.workerAnswered("ctx", answered.origin, answered.result.headers);
  return { answer: answered.result.body, origin: answered.origin, sentId: answered.id, keptTokenIds: answered.result.keptTokenIds };
}

/** The generation leg's answer: a whole JSON one, or the worker's stream (its attempt ends with the request). */
export type GenerationLegResult =
  | { kind: "json"; body: JsonObject; bytes: Uint8Array; headers: Headers }
  | { kind: "stream"; stream: WorkerStream; headers: Headers; origin: string; streamed: StreamedAttempt | undefined };

export async function runGenerationLeg(
  deps: PipelineDeps,
  ctx: RequestContext,
  input: PipelineInput,
  options: {
    exclude: string | undefined;
    signal?: AbortSignal;
    body: JsonObject;
    /** A generation worker reserved before the context phase (conditional disaggregation). */
    first?: Placed;
    /** The routing request with the context answer's token ids, when known. */
    routing?: RoutingRequest;
    /** The source the body was written from, when not the client's alone (it carries the context answer's ids). */
    source?: JsonSource | undefined;
    /** The body carries a context-first hand-off: its settler watches the leg. */
    handoff?: HandoffWatch | undefined;
    /** Generation workers to prefer not to use. */
    avoid?: readonly string[] | undefined;
  },
): Promise<GenerationLegResult> {
  const codec = deps.bodyCodec ?? JSON_CODEC;
  const plan: LegPlan = {
    role: "generation",
    path: WORKER_PATH[input.api],
    workers: {
      exclude: options.exclude,
      first: options.first,
      pinned: options.first !== undefined,
      avoid: options.avoid,
      // An aggregated Responses request (the fallback, a skipped context phase) may go to any worker.
      requires: input.api === "responses" && options.body["disaggregated_params"] !== undefined ? "responses_disaggregation" : undefined,
    },
    routing: options.routing ?? input.routing,
    signal: options.signal ?? ctx.signal,
    retryable: generationLegRetryable,
    headers: { ...codec.headers, ...disaggAuthOf(deps.settings.internalAuthKey, options.body) },
    id: ctx.engineRequestId,
    freshIdOnRetry: false,
    body: { of: () => options.body, codec, source: options.source ?? input.source },
    // subagent_affinity_scope "context": the generation fleet places a sub-agent by its own
    // conversation, so its worker gets no parent key ("both": it does).
    affinity: deps.settings.subagentAffinityScope === "both" ? input.affinity : undefined,
    handoff: options.handoff,
    firstTokenTimeoutMs: input.stream ? deps.settings.firstTokenTimeoutMs : undefined,
  };
  if (input.stream) {
    const { origin, result, streamed } = await runStreamLeg(deps, ctx, plan);
    ctx.legServed("generation", origin);
    ctx.perf?.workerAnswered("gen", origin, result.headers);
    return { kind: "stream", stream: result, headers: result.headers, origin, streamed };
  }
  const { origin, result } = await runJsonLeg(deps, ctx, plan);
  ctx.legServed("generation", origin);
  ctx.perf?.workerAnswered("gen", origin, result.headers);
  return { kind: "json", body: result.body, bytes: result.bytes, headers: result.headers };
}

/**
 * A streamed generation leg has answered once its first bytes are read: a worker that breaks
 * or stalls before them costs the client nothing but time (the request runs once more). The
 * relay is handed the read already made. Bounded by --first-token-timeout-ms from `startedAt`
 * (the leg's start), else by the request timeout.
 */
export async function withFirstBytes(
  deps: PipelineDeps,
  ctx: RequestContext,
  result: GenerationLegResult,
  id: bigint,
  startedAt: number,
): Promise<PipelineOutcome> {
  if (result.kind === "json") return { kind: "json", body: result.body, bytes: result.bytes };
  const reader = result.stream.reader;
  const firstTokenMs = deps.settings.firstTokenTimeoutMs;
  const boundMs = firstTokenMs > 0 ? Math.max(1, firstTokenMs - (performance.now() - startedAt)) : deps.settings.requestTimeoutMs;
  let failure: ProxyError;
  try {
    const read = await firstReadWithin(reader, boundMs, deps.deadlines);
    if (read !== "late" && !read.done) return { kind: "stream", first: { reader, read } };
    failure =
      read === "late"
        ? new ProxyError("WORKER_TIMEOUT", 504, `The generation worker sent nothing within ${firstTokenMs > 0 ? firstTokenMs : boundMs} ms`)
        : new ProxyError("WORKER_STREAM_BROKEN", 502, "The generation worker's stream ended before its first byte");
  } catch (cause) {
    failure = ctx.signal.aborted
      ? asProxyError(ctx.signal.reason)
      : new ProxyError("WORKER_STREAM_BROKEN", 502, "The generation worker's stream broke before its first byte", { cause });
  }
  void reader.cancel(failure).catch(() => {});
  result.streamed?.endEarly(failure);
  throw restartable(ctx, failure, result.origin, id);
}

/**
 * The stream's first read, or "late" after `ms`: on the shared wheel when there is one (a timer,
 * a race and its `finally` for every stream cost ~2 % of the JS thread on paced streams).
 */
function firstReadWithin(
  reader: ByteReader,
  ms: number,
  deadlines: Deadlines | undefined,
): Promise<ReadableStreamReadResult<Uint8Array> | "late"> {
  if (deadlines === undefined) return withDeadline(reader.read(), ms);
  return new Promise((resolve, reject) => {
    const drop = deadlines.schedule(ms, () => resolve("late"));
    const answered = (read: ReadableStreamReadResult<Uint8Array>): void => {
      drop();
      resolve(read);
    };
    const broke = (error: unknown): void => {
      drop();
      reject(error);
    };
    reader.read().then(answered, broke);
  });
}
