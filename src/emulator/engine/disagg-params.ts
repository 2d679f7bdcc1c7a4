/**
 * `disaggregated_params` on the worker side: what a context worker answers, and what a
 * generation worker demands of the request the proxy built from that answer.
 */

import { isJsonObject, jsonInteger, readInteger, type JsonObject, type JsonValue } from "../../json/json.ts";
import { encodeTokenIdsBase64, tokenIdList, type ModelRequest } from "../http/model-request.ts";
import { decodeOpaqueState, encodeOpaqueState, type OpaqueState } from "./opaque-state.ts";
import { WorkerError } from "../http/worker-error.ts";

export interface ContextHandover {
  readonly workerUrl: string;
  readonly firstTokenId: number;
  readonly promptTokenIds: readonly number[];
  /** disagg_request_id when the proxy sent one, else the worker's local id. */
  readonly engineRequestId: bigint;
  readonly directives: string;
}

/** Adds the context-phase extras to a non-streamed answer of any API. */
export function withContextExtras(request: ModelRequest, answer: JsonObject, handover: ContextHandover, finishReason: string): JsonObject {
  const params = contextParams(request, handover);
  const wantsBase64 = request.disagg?.["return_prompt_token_ids_b64"] === true;
  const promptIds = wantsBase64
    ? { prompt_token_ids_b64: encodeTokenIdsBase64(handover.promptTokenIds) }
    : { prompt_token_ids: [...handover.promptTokenIds] };
  // Responses has no choices: the params sit at the top level, and so does the finish_reason
  // the orchestrator decides continuation by (#18497).
  if (request.api === "responses") return { ...answer, finish_reason: finishReason, disaggregated_params: params, ...promptIds };
  const [first] = Array.isArray(answer["choices"]) ? answer["choices"] : [];
  const choice = isJsonObject(first) ? first : {};
  return { ...answer, choices: [{ ...choice, disaggregated_params: params }], ...promptIds };
}

function contextParams(request: ModelRequest, handover: ContextHandover): JsonObject {
  const disaggId = request.disaggRequestId;
  const state: OpaqueState = {
    worker: handover.workerUrl,
    disaggRequestId: disaggId,
    promptTokens: handover.promptTokenIds.length,
    directives: handover.directives,
  };
  return {
    request_type: "context_only",
    first_gen_tokens: [handover.firstTokenId],
    ctx_request_id: jsonInteger(handover.engineRequestId),
    encoded_opaque_state: encodeOpaqueState(state),
    draft_tokens: null,
    disagg_request_id: disaggId === undefined ? null : jsonInteger(disaggId),
    ctx_dp_rank: 0,
    ctx_info_endpoint: handover.workerUrl,
    schedule_style: request.disagg?.["schedule_style"] ?? null,
  };
}

export type GenerationSource =
  | {
      readonly style: "context_first";
      readonly state: OpaqueState;
      readonly firstGenTokens: readonly number[];
      readonly ctxRequestId: bigint;
    }
  | { readonly style: "generation_first"; readonly endpoint: string; readonly disaggRequestId: bigint }
  /** trtllm-serve's generation-only benchmark: fixed first token, no KV, the prompt as sent. */
  | { readonly style: "benchmark" };

/** Throws WorkerError(400) with the first thing the proxy got wrong. */
export function checkGenerationRequest(request: ModelRequest): GenerationSource {
  const params = request.disagg ?? {};
  const style = readInteger(params["schedule_style"]);
  if (style === undefined || style === 0n) return checkContextFirst(request, params);
  if (style === 1n) return checkGenerationFirst(request, params);
  throw invalid(`schedule_style ${style} is neither 0 (context first) nor 1 (generation first)`);
}

function checkContextFirst(request: ModelRequest, params: JsonObject): GenerationSource {
  const firstGenTokens = tokenIdList(params["first_gen_tokens"]);
  if (firstGenTokens === undefined || firstGenTokens.length === 0) {
    throw invalid("first_gen_tokens must be a non-empty list of integers");
  }
  const ctxRequestId = readInteger(params["ctx_request_id"]);
  if (ctxRequestId === undefined) throw invalid("ctx_request_id is missing");
  const encoded = params["encoded_opaque_state"];
  if (encoded === null && request.disaggRequestId === undefined) return { style: "benchmark" };
  if (typeof encoded !== "string") throw invalid("encoded_opaque_state is missing");
  const state = decodeOpaqueState(encoded);
  if (state === undefined) throw invalid("encoded_opaque_state is not the state a context worker returned");
  if (state.disaggRequestId !== request.disaggRequestId) {
    throw invalid(
      `encoded_opaque_state belongs to disagg_request_id ${state.disaggRequestId ?? "none"}, not ${request.disaggRequestId ?? "none"}`,
    );
  }
  checkPromptTokens(request, state);
  return { style: "context_first", state, firstGenTokens, ctxRequestId };
}

function checkPromptTokens(request: ModelRequest, state: OpaqueState): void {
  const ids = request.givenTokenIds;
  if (ids === undefined) {
    const field = request.api === "completions" ? "prompt (as token ids)" : "prompt_token_ids";
    throw new WorkerError(400, `A generation_only ${request.api} request must carry the context phase's ${field}`);
  }
  if (ids.length !== state.promptTokens) {
    throw new WorkerError(400, `The prompt has ${ids.length} tokens, but its context phase had ${state.promptTokens}`);
  }
}

function checkGenerationFirst(request: ModelRequest, params: JsonObject): GenerationSource {
  const disaggRequestId = request.disaggRequestId;
  if (disaggRequestId === undefined) throw invalid("generation first needs a disagg_request_id");
  if (readInteger(params["ctx_request_id"]) !== disaggRequestId) {
    throw invalid("ctx_request_id must equal disagg_request_id in generation first");
  }
  if (!isAbsentOrEmpty(params["first_gen_tokens"])) throw invalid("first_gen_tokens must be absent in generation first");
  const endpoint = params["ctx_info_endpoint"];
  if (typeof endpoint !== "string" || endpoint === "") {
    throw invalid("ctx_info_endpoint must be the context worker's URL as a string (the first of /server_info's list)");
  }
  return { style: "generation_first", endpoint, disaggRequestId };
}

function isAbsentOrEmpty(value: JsonValue | undefined): boolean {
  return value === undefined || value === null || (Array.isArray(value) && value.length === 0);
}

function invalid(detail: string): WorkerError {
  return new WorkerError(400, `Invalid disaggregated_params for generation_only: ${detail}`);
}

/** Prompt and cached token counts the context phase reported, when the proxy forwarded them. */
export function contextUsage(request: ModelRequest): { prompt: number; cached: number } | undefined {
  const usage = request.disagg?.["ctx_usage"];
  if (!isJsonObject(usage) || typeof usage["prompt_tokens"] !== "number") return undefined;
  const details = usage["prompt_tokens_details"];
  const cached = isJsonObject(details) ? details["cached_tokens"] : undefined;
  return { prompt: usage["prompt_tokens"], cached: typeof cached === "number" ? cached : 0 };
}
