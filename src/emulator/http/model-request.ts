/** What a model request (completions, chat, responses) asks of the worker, read once from its body. */

import { isJsonObject, readInteger, type JsonObject, type JsonValue } from "../../json/json.ts";
import { messagesText, responsesText } from "../engine/prompt-text.ts";
import type { RequestPhase } from "../types.ts";
import { WorkerError } from "./worker-error.ts";

export type ApiKind = "completions" | "chat" | "responses";
export type ModelPhase = Exclude<RequestPhase, "other">;

export interface ModelRequest {
  readonly api: ApiKind;
  readonly body: JsonObject;
  readonly phase: ModelPhase;
  /** `disaggregated_params`, when the request has one. */
  readonly disagg: JsonObject | undefined;
  readonly disaggRequestId: bigint | undefined;
  /** Text for the tokenizer and the directives; empty when the prompt came as token ids. */
  readonly promptText: string;
  /** Token ids the request carries itself: a completions id prompt, or chat/responses prompt_token_ids. */
  readonly givenTokenIds: readonly number[] | undefined;
  readonly maxTokens: number | undefined;
  readonly stream: boolean;
  readonly includeUsage: boolean;
  /** vLLM-style `continuous_usage_stats`: usage on every chunk (the Anthropic route asks for it). */
  readonly continuousUsage: boolean;
  /** Responses `request_id`: the reply is named after it. */
  readonly requestId: string | undefined;
}

const PHASES: Readonly<Record<string, ModelPhase>> = {
  context_only: "context",
  generation_only: "generation",
  context_and_generation: "aggregated",
};

/** The phase as recorded, read leniently so even a request the worker rejects is classified. */
export function phaseOf(body: JsonValue | undefined): RequestPhase {
  if (!isJsonObject(body)) return "other";
  const params = body["disaggregated_params"];
  if (params === undefined || params === null) return "aggregated";
  const type = isJsonObject(params) ? params["request_type"] : undefined;
  return typeof type === "string" ? (PHASES[type] ?? "other") : "other";
}

export function disaggRequestIdOf(body: JsonValue | undefined): bigint | undefined {
  if (!isJsonObject(body)) return undefined;
  const params = body["disaggregated_params"];
  return isJsonObject(params) ? readInteger(params["disagg_request_id"]) : undefined;
}

/** Throws WorkerError(400) naming the first field the worker cannot accept. */
export function readModelRequest(api: ApiKind, body: JsonValue): ModelRequest {
  if (!isJsonObject(body)) throw new WorkerError(400, "Cannot read the request: the body is not a JSON object");
  const phase = phaseOf(body);
  if (phase === "other") throw new WorkerError(400, "Cannot read disaggregated_params: request_type is missing or unknown");
  const stream = body["stream"] === true;
  const streamOptions = body["stream_options"];
  if (streamOptions !== undefined && streamOptions !== null && !stream) {
    throw new WorkerError(400, "Stream options can only be defined when `stream=True`.");
  }
  if (phase === "context" && stream) throw new WorkerError(400, "A context_only request cannot stream: stream must be false");
  const params = body["disaggregated_params"];
  const [promptText, givenTokenIds] = readPrompt(api, body);
  return {
    api,
    body,
    phase,
    disagg: isJsonObject(params) ? params : undefined,
    disaggRequestId: disaggRequestIdOf(body),
    promptText,
    givenTokenIds,
    maxTokens: readMaxTokens(api, body),
    stream,
    includeUsage: isJsonObject(streamOptions) && streamOptions["include_usage"] === true,
    continuousUsage: isJsonObject(streamOptions) && streamOptions["continuous_usage_stats"] === true,
    requestId: typeof body["request_id"] === "string" ? body["request_id"] : undefined,
  };
}

function readPrompt(api: ApiKind, body: JsonObject): [string, readonly number[] | undefined] {
  if (api === "completions") return readCompletionsPrompt(body["prompt"]);
  if (api === "chat") {
    if (!Array.isArray(body["messages"]) || body["messages"].length === 0) {
      throw new WorkerError(400, "Cannot read messages: expected a non-empty list");
    }
    return [messagesText(body["messages"]), readGivenIds(body)];
  }
  const input = body["input"];
  if (typeof input !== "string" && !Array.isArray(input)) {
    throw new WorkerError(400, "Cannot read input: expected a string or a list of items");
  }
  return [responsesText(body["instructions"], input), readGivenIds(body)];
}

/** One prompt only: a string, a list of token ids, or a one-element list of either. */
function readCompletionsPrompt(prompt: JsonValue | undefined): [string, readonly number[] | undefined] {
  const single = Array.isArray(prompt) && prompt.length === 1 && !isTokenId(prompt[0]) ? prompt[0] : prompt;
  if (typeof single === "string") return [single, undefined];
  const ids = tokenIdList(single);
  if (ids !== undefined && ids.length > 0) return ["", ids];
  throw new WorkerError(400, "Cannot read prompt: the emulator takes one prompt, a string or a list of token ids");
}

/** Chat and responses carry the context phase's tokens as prompt_token_ids (or its int32 base64 form). */
function readGivenIds(body: JsonObject): readonly number[] | undefined {
  const plain = body["prompt_token_ids"];
  if (plain !== undefined && plain !== null) {
    const ids = tokenIdList(plain);
    if (ids === undefined) throw new WorkerError(400, "Cannot read prompt_token_ids: expected a list of integers");
    return ids;
  }
  const packed = body["prompt_token_ids_b64"];
  if (typeof packed === "string") return decodeTokenIdsBase64(packed);
  return undefined;
}

export function tokenIdList(value: JsonValue | undefined): number[] | undefined {
  if (!Array.isArray(value) || !value.every(isTokenId)) return undefined;
  return value;
}

function isTokenId(value: JsonValue | undefined): value is number {
  return typeof value === "number" && Number.isInteger(value) && value >= 0;
}

/** The `prompt_token_ids_b64` encoding: little-endian int32 values, base64. */
export function encodeTokenIdsBase64(ids: readonly number[]): string {
  return Buffer.from(new Int32Array(ids).buffer).toString("base64");
}

function decodeTokenIdsBase64(packed: string): number[] {
  const bytes = Buffer.from(packed, "base64");
  if (bytes.length % 4 !== 0) throw new WorkerError(400, "Cannot read prompt_token_ids_b64: not a whole number of int32 values");
  return Array.from({ length: bytes.length / 4 }, (_, i) => bytes.readInt32LE(i * 4));
}

const MAX_TOKEN_FIELDS: Readonly<Record<ApiKind, readonly string[]>> = {
  completions: ["max_tokens"],
  chat: ["max_completion_tokens", "max_tokens"],
  responses: ["max_output_tokens"],
};

function readMaxTokens(api: ApiKind, body: JsonObject): number | undefined {
  for (const field of MAX_TOKEN_FIELDS[api]) {
    const value = body[field];
    if (value === undefined || value === null) continue;
    if (typeof value !== "number" || !Number.isInteger(value) || value < 1) {
      throw new WorkerError(400, `Cannot read ${field}: expected an integer of at least 1`);
    }
    return value;
  }
  return undefined;
}
