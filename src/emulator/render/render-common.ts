/** What every reply renderer shares: the per-request facts and the stream renderer contract. */

import type { JsonObject } from "../../json/json.ts";
import { encodeData } from "../../sse/encode.ts";
import type { ModelRequest } from "../http/model-request.ts";
import type { FinishReason, OutputPlan, OutputToken } from "../engine/output-plan.ts";
import type { ReplyIds } from "./reply-ids.ts";

export interface RenderContext {
  readonly request: ModelRequest;
  readonly ids: ReplyIds;
  /** The name this worker serves the model under (replies carry it, whatever the request said). */
  readonly model: string;
  readonly promptTokens: number;
  readonly cachedTokens: number;
}

/** Turns engine events into the bytes of one API's stream, in order. */
export interface StreamRenderer {
  /** Bytes sent before the engine produces anything (Responses: created + in_progress). */
  opening(): Uint8Array[];
  token(token: OutputToken, index: number): Uint8Array[];
  /** Bytes for a silence of the keepalive interval (Responses only). */
  keepalive(): Uint8Array[];
  /** The in-band error fault; the stream ends after these bytes. */
  error(message: string): Uint8Array[];
  /** The end of a complete stream. */
  done(): Uint8Array[];
}

/** Non-streamed reply body: tokens produced and the reason generation stopped. */
export type JsonRenderer = (tokens: readonly OutputToken[], finishReason: FinishReason) => JsonObject;

export interface ApiRenderers {
  readonly json: JsonRenderer;
  readonly stream: (plan: OutputPlan) => StreamRenderer;
}

export function reasoningCount(tokens: readonly OutputToken[]): number {
  return tokens.filter((token) => token.kind === "reasoning").length;
}

/** OpenAI chat/completions usage, as trtllm-serve reports it. */
export function openAiUsage(context: RenderContext, tokens: readonly OutputToken[]): JsonObject {
  const reasoning = reasoningCount(tokens);
  return {
    prompt_tokens: context.promptTokens,
    total_tokens: context.promptTokens + tokens.length,
    completion_tokens: tokens.length,
    prompt_tokens_details: { cached_tokens: context.cachedTokens },
    ...(reasoning > 0 ? { completion_tokens_details: { reasoning_tokens: reasoning } } : {}),
  };
}

/** vLLM-style in-band error for chat/completions streams: `data: {"error": {…}}`. */
export function openAiStreamError(message: string): Uint8Array {
  return encodeData(JSON.stringify({ error: { message, type: "InternalServerError", param: null, code: 500 } }));
}
