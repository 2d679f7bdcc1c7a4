/** Running the engine for a prepared request and turning its output into an HTTP reply. */

import type { JsonObject } from "../json.ts";
import { bodyStream, wholeBody } from "./body-stream.ts";
import { ConnectionCut, runEngine, type EngineEvent, type EngineRun } from "./engine.ts";
import type { OutputToken } from "./output-plan.ts";
import type { PreparedJob } from "./prepare-job.ts";
import type { StreamRenderer } from "./render-common.ts";

const JSON_TYPE = "application/json";
const SSE_TYPE = "text/event-stream; charset=utf-8";
const encoder = new TextEncoder();

export function engineRun(prepared: PreparedJob, tokens: readonly OutputToken[], keepaliveMs?: number): EngineRun {
  const { settings } = prepared;
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
  try {
    for await (const event of runEngine(run, prepared.job.signal)) {
      if (event.kind === "token") tokens.push(event.token);
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
  return reply(prepared, wholeBody(encoder.encode(JSON.stringify(answer)), cut), JSON_TYPE);
}

/** A streamed answer: the response starts now, the engine runs as the reader pulls. */
export function streamReply(prepared: PreparedJob, renderer: StreamRenderer, run: EngineRun): Response {
  const events = runEngine(run, prepared.job.signal);
  return reply(prepared, sseBytes(renderer, events), SSE_TYPE);
}

async function* sseBytes(renderer: StreamRenderer, events: AsyncIterable<EngineEvent>): AsyncGenerator<Uint8Array, void> {
  yield* renderer.opening();
  for await (const event of events) {
    if (event.kind === "token") yield* renderer.token(event.token, event.index);
    if (event.kind === "keepalive") yield* renderer.keepalive();
    if (event.kind === "error") {
      yield* renderer.error(event.message);
      return;
    }
  }
  yield* renderer.done();
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

function replyHeaders(prepared: PreparedJob, contentType: string): Record<string, string> {
  const headers: Record<string, string> = { "content-type": contentType };
  if (contentType === SSE_TYPE) headers["cache-control"] = "no-cache";
  // trtllm-serve names the engine request behind every /v1/responses reply (seed #21602).
  if (prepared.job.request.api === "responses") {
    headers["x-trtllm-engine-request-id"] = prepared.job.engineRequestId.toString();
  }
  return headers;
}
