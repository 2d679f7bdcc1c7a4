import { ProxyError } from "../errors.ts";
import { isJsonObject, jsonInteger, readInteger, type JsonObject, type JsonValue } from "../json/json.ts";
import { unpackTokenIds } from "./protocol-fit.ts";
import type { ApiKind, PipelineInput } from "./types.ts";

/**
 * The bodies sent to workers (reference §2.5–2.6): the client's body with only the proxy's
 * own fields set; everything else, unknown fields included, forwarded for the worker to judge.
 */

const SCHEDULE_STYLE = { context_first: 0, generation_first: 1 } as const;
export type Schedule = keyof typeof SCHEDULE_STYLE;

/** Deployment switches from disagg_config.yaml that shape the bodies. */
export interface BodyOptions {
  /** gen_tokids_ctxbytes: ask the context worker for prompt_token_ids_b64 (chat requests). */
  readonly tokenIdsAsBytes: boolean;
  /** gen_strip_message_history: the generation worker gets only the last chat message. */
  readonly stripMessageHistory: boolean;
}

export function contextBody(input: PipelineInput, id: bigint, schedule: Schedule, options?: BodyOptions): JsonObject {
  const params: JsonObject = {
    request_type: "context_only",
    disagg_request_id: jsonInteger(id),
    schedule_style: SCHEDULE_STYLE[schedule],
  };
  // Only a chat generation request can carry the packed ids (ChatCompletionRequest.prompt_token_ids_b64;
  // openai_disagg_service.py _get_gen_request relays them for chat alone): a completions one
  // takes them as its prompt list, and CompletionRequest forbids the field.
  if (options?.tokenIdsAsBytes === true && input.api === "chat") params["return_prompt_token_ids_b64"] = true;
  const body: JsonObject = { ...input.body, stream: false, disaggregated_params: params };
  // Responses requests have no stream_options field; workers reject unknown fields.
  if (input.api !== "responses") body["stream_options"] = null;
  return body;
}

/** The context answer's hand-off parameters: choices[0] for chat/completions, top level for Responses. */
export function handOffParams(api: ApiKind, answer: JsonObject): JsonObject | undefined {
  const holder = api === "responses" ? answer : firstChoice(answer);
  const params = holder?.["disaggregated_params"];
  return isJsonObject(params) ? params : undefined;
}

/**
 * True when the context phase left generation to do: finish_reason length / not_finished
 * (openai_disagg_service.py `_need_gen`, `_GEN_PENDING_FINISH_REASONS`). A Responses answer
 * has no choices: upstream (#18497) reads its top-level finish_reason; a worker that does
 * not report one is judged by its status.
 */
export function needsGeneration(api: ApiKind, answer: JsonObject): boolean {
  const reason = api === "responses" ? answer["finish_reason"] : firstChoice(answer)?.["finish_reason"];
  if (api === "responses" && (reason === undefined || reason === null)) return answer["status"] !== "completed";
  return reason === "length" || reason === "not_finished";
}

/** Checks the context answer as trtllm-serve does (§2.5 step 4); returns the id to continue under. */
export function verifyContextAnswer(api: ApiKind, answer: JsonObject, sentId: bigint): bigint {
  if (api !== "responses") {
    const choices = answer["choices"];
    if (!Array.isArray(choices) || choices.length !== 1) {
      throw badAnswer(`Context server returned ${Array.isArray(choices) ? choices.length : 0} choices, expecting 1`);
    }
  }
  const params = handOffParams(api, answer);
  if (!params) throw badAnswer("Context server did not return disaggregated params");
  if (!needsGeneration(api, answer)) return sentId;
  if (params["ctx_request_id"] === undefined || params["ctx_request_id"] === null) {
    throw badAnswer("Invalid disaggregated params: ctx_request_id is missing");
  }
  const echoed = readInteger(params["disagg_request_id"]);
  if (echoed === undefined) throw badAnswer("Invalid disaggregated params: disagg_request_id is missing");
  return echoed;
}

/** Context-first generation request: the context's hand-off carried verbatim, prompt as token ids. */
export function generationBody(
  input: PipelineInput,
  answer: JsonObject,
  id: bigint,
  schedule: Schedule,
  options?: BodyOptions,
): JsonObject {
  const params = handOffParams(input.api, answer) ?? {};
  const body: JsonObject = {
    ...input.body,
    disaggregated_params: {
      ...params,
      request_type: "generation_only",
      disagg_request_id: jsonInteger(id),
      schedule_style: SCHEDULE_STYLE[schedule],
      // The context answer's usage, so the generation worker reports the request's real prompt and
      // cached tokens (#14177; openai_disagg_service.py _get_gen_request). Cut for older workers (protocol-fit.ts).
      ...contextUsage(input.api, answer),
    },
  };
  const messages = body["messages"];
  if (options?.stripMessageHistory === true && input.api === "chat" && Array.isArray(messages) && messages.length > 1) {
    body["messages"] = messages.slice(-1);
  }
  // Packed ids go on only to a chat request, the one request model with the field (an answer
  // to another route carrying them would otherwise cost that worker the field for every client:
  // its 400 reads as the worker's version lacking it). Elsewhere they are the prompt's list.
  const b64 = answer["prompt_token_ids_b64"];
  if (typeof b64 === "string" && input.api === "chat") {
    body["prompt_token_ids_b64"] = b64;
    return body;
  }
  const listed = answer["prompt_token_ids"];
  const tokens = (listed === undefined || listed === null) && typeof b64 === "string" ? unpackTokenIds(b64) : listed;
  if (tokens !== undefined && tokens !== null) {
    const field = input.api === "completions" ? "prompt" : "prompt_token_ids";
    body[field] = sameList(tokens, body[field]) ? body[field] : tokens;
  }
  return body;
}

/**
 * The client's own list when the context answer's ids are the same values (a prompt given as
 * ids comes back unchanged): the client's value is then sent as the client's bytes
 * (workers/body-codec.ts spliceBody) instead of being serialised again.
 */
function sameList(answer: JsonValue, client: JsonValue | undefined): client is JsonValue[] {
  if (!Array.isArray(answer) || !Array.isArray(client) || answer.length !== client.length) return false;
  for (let i = 0; i < answer.length; i++) {
    const item = answer[i];
    if (typeof item !== "number" || item !== client[i]) return false;
  }
  return true;
}

/**
 * Generation-first request: sent before any context answer exists, so it names the
 * hand-off by id and takes the context worker's endpoint from its /server_info.
 */
export function generationFirstBody(input: PipelineInput, id: bigint, contextServerInfo: JsonObject | undefined): JsonObject {
  const fromInfo = contextServerInfo?.["disaggregated_params"];
  const merged: JsonObject = isJsonObject(fromInfo) ? { ...fromInfo } : {};
  const endpoint = merged["ctx_info_endpoint"];
  if (Array.isArray(endpoint)) merged["ctx_info_endpoint"] = endpoint[0] ?? null;
  return {
    ...input.body,
    disaggregated_params: {
      request_type: "generation_only",
      ctx_request_id: jsonInteger(id),
      schedule_style: SCHEDULE_STYLE.generation_first,
      ...merged,
      disagg_request_id: jsonInteger(id),
    },
  };
}

/**
 * TRTLLM_DISAGG_BENCHMARK_GEN_ONLY (reference §1.6): a generation worker is sent the request
 * with fixed hand-off parameters and no context phase, to measure generation alone.
 */
export function benchmarkGenerationBody(input: PipelineInput): JsonObject {
  return {
    ...input.body,
    disaggregated_params: {
      request_type: "generation_only",
      first_gen_tokens: [7],
      ctx_request_id: 1,
      encoded_opaque_state: null,
      draft_tokens: null,
    },
    ignore_eos: true,
  };
}

/** The context answer as the client's final answer: without the hand-off parameters. */
export function withoutHandOff(api: ApiKind, answer: JsonObject): JsonObject {
  if (api === "responses") {
    const { disaggregated_params: _params, prompt_token_ids: _tokens, ...rest } = answer;
    return rest;
  }
  const choices = answer["choices"];
  if (!Array.isArray(choices)) return answer;
  const cleaned: JsonValue[] = choices.map((choice) => {
    if (!isJsonObject(choice)) return choice;
    const { disaggregated_params: _params, ...rest } = choice;
    return rest;
  });
  const { prompt_token_ids: _tokens, ...rest } = answer;
  return { ...rest, choices: cleaned };
}

/** ctx_usage is a UsageInfo (prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details.cached_tokens). */
function contextUsage(api: ApiKind, answer: JsonObject): { ctx_usage?: JsonObject } {
  const usage = answer["usage"];
  if (!isJsonObject(usage)) return {};
  if (api !== "responses") return { ctx_usage: usage };
  // A Responses answer counts input/output tokens; the worker's DisaggregatedParams takes UsageInfo.
  const details = usage["input_tokens_details"];
  const cached = isJsonObject(details) ? details["cached_tokens"] : undefined;
  const ctxUsage: JsonObject = {
    prompt_tokens: usage["input_tokens"] ?? 0,
    completion_tokens: usage["output_tokens"] ?? 0,
    total_tokens: usage["total_tokens"] ?? 0,
  };
  if (typeof cached === "number") ctxUsage["prompt_tokens_details"] = { cached_tokens: cached };
  return { ctx_usage: ctxUsage };
}

function firstChoice(answer: JsonObject): JsonObject | undefined {
  const choices = answer["choices"];
  const first: unknown = Array.isArray(choices) ? choices[0] : undefined;
  return isJsonObject(first) ? first : undefined;
}

function badAnswer(message: string): ProxyError {
  return new ProxyError("WORKER_BAD_ANSWER", 502, message);
}
