/** Running the engine for a prepared request and turning its output into an HTTP reply. */

import { readInteger, type JsonObject } from "../../json/json.ts";
import { bodyStream, wholeBody } from "../http/body-stream.ts";
import { ConnectionCut, runEngine, type EngineEvent, type EngineRun } from "../engine/engine.ts";
import type { OutputToken } from "../engine/output-plan.ts";
import type { PreparedJob } from "../engine/prepare-job.ts";
import type { StreamRenderer } from "./render-common.ts";

const JSON_TYPE = "application/json";
const SSE_TYPE = "text/event-stream; charset=utf-8";
const encoder = new TextEncoder();

export function engineRun(prepared: PreparedJob, tokens: readonly OutputToken[], keepaliveMs?: number): EngineRun {
  const { settings, job } = prepared;
  job.perf.setKvFacts({
    promptTokens: prepared.promptTokenIds.length,
    cachedTokens: settings.cachedTokens,
    tokensPerBlock: job.worker.options.tokensPerBlock ?? 32,
  });
  return {
    prefillMs: settings.prefillMs,
    tokenMs: settings.tokenMs,
    tokens,
    cutAfterTokens: settings.cutAfterTokens,
    errorEventAfterTokens: settings.errorEventAfterTokens,
    silence: settings.silence,
    keepaliveMs,
  };
}

export interface CollectedOutput {
  readonly tokens: readonly OutputToken[];
  /** Set when the in-band error fault struck. */
  readonly errorMessage: string | undefined;
  /** Set when the cut fault struck: the reply must break off. */
  readonly cut: ConnectionCut | undefined;
}

/** Runs the engine to the end for a non-streamed answer. */
export async function collectOutput(prepared: PreparedJob, run: EngineRun): Promise<CollectedOutput> {
  const tokens: OutputToken[] = [];
  const { perf } = prepared.job;
  perf.markScheduled();
  try {
    for await (const event of runEngine(run, prepared.job.signal)) {
      if (event.kind === "token") {
        perf.markToken();
        tokens.push(event.token);
      }
      if (event.kind === "error") return { tokens, errorMessage: event.message, cut: undefined };
    }
  } catch (error) {
    if (error instanceof ConnectionCut) return { tokens, errorMessage: undefined, cut: error };
    throw error;
  }
  return { tokens, errorMessage: undefined, cut: undefined };
}

/** A non-streamed JSON answer (cut halfway when the cut fault struck). */
export function jsonReply(prepared: PreparedJob, answer: JsonObject, cut: ConnectionCut | undefined): Response {
  const { perf, request } = prepared.job;
  perf.markServerFirstToken();
  const bytes = encoder.encode(JSON.stringify(answer));
  const whole = cut === undefined && prepared.settings.chunkBytes === undefined;
  const response = whole ? declaredReply(prepared, bytes) : reply(prepared, wholeBody(bytes, cut), JSON_TYPE);
  if (cut !== undefined) return response;
  keepRecord(prepared);
  if (perf.requested) for (const [name, value] of Object.entries(perf.responseHeaders(request.phase))) response.headers.set(name, value);
  return response;
}

/** A streamed answer: the response starts now, the engine runs as the reader pulls. */
export function streamReply(prepared: PreparedJob, renderer: StreamRenderer, run: EngineRun): Response {
  const events = runEngine(run, prepared.job.signal);
  return reply(prepared, sseBytes(prepared, renderer, events), SSE_TYPE);
}

async function* sseBytes(
  prepared: PreparedJob,
  renderer: StreamRenderer,
  events: AsyncIterable<EngineEvent>,
): AsyncGenerator<Uint8Array, void> {
  const { perf, request } = prepared.job;
  yield* renderer.opening();
  perf.markScheduled();
  for await (const event of events) {
    if (event.kind === "token") {
      perf.markToken();
      yield* renderer.token(event.token, event.index);
      perf.markServerFirstToken();
    }
    if (event.kind === "keepalive") yield* renderer.keepalive();
    if (event.kind === "error") {
      yield* renderer.error(event.message);
      return;
    }
  }
  yield* renderer.done();
  keepRecord(prepared);
  // trtllm-serve appends its metrics to a stream that asked for them, after [DONE].
  const event = perf.requested ? perf.streamEvent(request.phase) : undefined;
  if (event !== undefined) yield event;
}

/** The finished request's /perf_metrics record (kept only when the worker keeps records). */
function keepRecord(prepared: PreparedJob): void {
  const { job } = prepared;
  const { request } = job;
  const ctxRequestId = request.phase === "context" ? job.engineRequestId : readInteger(request.disagg?.["ctx_request_id"]);
  job.worker.perf.keep(job.perf.record(request.phase, job.engineRequestId, ctxRequestId));
}

function reply(prepared: PreparedJob, source: AsyncIterator<Uint8Array, void>, contentType: string): Response {
  const { job } = prepared;
  const body = bodyStream(source, {
    chunkBytes: prepared.settings.chunkBytes,
    onEnd: job.finish,
    onCancel: job.cancel,
    onPiece: job.worker.options.recordReplies === true ? (piece) => job.record.sent.push(piece) : undefined,
  });
  return new Response(body, { status: 200, headers: replyHeaders(prepared, contentType) });
}

/**
 * An answer sent whole, its length declared: trtllm-serve answers with FastAPI's JSONResponse,
 * which sets Content-Length (tensorrt_llm/serve/openai_server.py,
 * `return JSONResponse(content=response.model_dump())`). Bun sends a stream body chunked
 * whatever its headers say, so this one is handed over as bytes, and the request is finished.
 */
function declaredReply(prepared: PreparedJob, bytes: Uint8Array): Response {
  const { job } = prepared;
  if (job.worker.options.recordReplies === true) job.record.sent.push(bytes);
  job.finish();
  return new Response(bytes, { status: 200, headers: replyHeaders(prepared, JSON_TYPE) });
}

function replyHeaders(prepared: PreparedJob, contentType: string): Record<string, string> {
  const headers: Record<string, string> = { "content-type": contentType };
  if (contentType === SSE_TYPE) headers["cache-control"] = "no-cache";
  // trtllm-serve names the engine request behind every /v1/responses reply (seed #21602).
  if (prepared.job.request.api === "responses") {
    headers["x-trtllm-engine-request-id"] = prepared.job.engineRequestId.toString();
  }
  return headers;
}
