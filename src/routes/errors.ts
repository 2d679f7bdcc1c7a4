import { errorType } from "../dialects/openai.ts";
import { overloaded } from "../pipeline/retry.ts";
import type { ProxyError } from "../errors.ts";
import { isJsonObject, parseJsonOrUndefined, type JsonObject, type JsonValue } from "../json/json.ts";

/** Seconds a refused client is told to wait before trying again (draining, overload). */
export const RETRY_AFTER_S = 5;

/** Headers of an error answer: a refused client (draining, overload here or a worker's) is told when to come back. */
export function errorHeaders(error: ProxyError, headers?: Headers): Headers {
  const out = new Headers(headers);
  if (error.code === "DRAINING" || error.code === "OVERLOADED" || error.code === "WORKERS_BUSY" || overloaded(error))
    out.set("retry-after", String(RETRY_AFTER_S));
  // A client that trickles its body, or whose body was refused before it was all read, does
  // not keep the connection: what is left of the body must not be read as a next request.
  if (
    error.code === "BODY_TOO_SLOW" ||
    error.code === "BODY_TOO_LARGE" ||
    error.code === "BODY_TOO_DEEP" ||
    error.code === "BODY_TOO_FRAGMENTED"
  )
    out.set("connection", "close");
  return out;
}

/**
 * A failure as an HTTP answer in OpenAI's dialect. A worker's own error answer keeps its status
 * and its fields; the proxy's errors use the envelope trtllm-serve workers use. Either way the
 * body also carries OpenAI's `error` object, the only part the OpenAI SDKs read: trtllm-serve's
 * flat `{"object":"error","message":…}` alone shows there as "400 status code (no body)".
 */
export function openAiErrorResponse(error: ProxyError, headers?: Headers): Response {
  const out = errorHeaders(error, headers);
  const answer = error.workerAnswer;
  if (answer && answer.status === error.status) {
    const relayed = parseJsonOrUndefined(new TextDecoder().decode(answer.body));
    // A body that is no JSON object (a proxy's page, a cut prefix) is relayed as it came.
    out.set("content-type", isJsonObject(relayed) ? "application/json" : answer.contentType);
    const body = isJsonObject(relayed) ? JSON.stringify(withOpenAiError(relayed, error)) : answer.body;
    return new Response(body, { status: answer.status, headers: out });
  }
  out.set("content-type", "application/json");
  const body = error.code === "MODEL_NOT_FOUND" ? modelNotFoundBody(error) : openAiErrorBody(error.status, error.message);
  return new Response(JSON.stringify(body), { status: error.status, headers: out });
}

/** The proxy's own error body: trtllm-serve's flat fields and OpenAI's `error` object with the same values. */
export function openAiErrorBody(status: number, message: string, type = errorType(status)): JsonObject {
  return { object: "error", message, type, param: null, code: status, error: { message, type, param: null, code: status } };
}

/**
 * A worker's error body with OpenAI's `error` object beside its own fields, made from them (a
 * body that has one keeps it). Its message is the worker's statement the proxy read from it.
 */
function withOpenAiError(body: JsonObject, error: ProxyError): JsonObject {
  if (isJsonObject(body["error"]) && typeof body["error"]["message"] === "string") return body;
  const field = (name: string, fallback: JsonValue): JsonValue => body[name] ?? fallback;
  const type = field("type", errorType(error.status));
  return { ...body, error: { message: error.message, type, param: field("param", null), code: field("code", error.status) } };
}

/**
 * A model no worker serves, in OpenAI's own envelope (what its SDKs and Codex read as
 * `model_not_found`), since no trtllm-serve worker ever refuses a model: it serves one.
 */
function modelNotFoundBody(error: ProxyError): { error: { message: string; type: string; param: string; code: string } } {
  return { error: { message: error.message, type: "invalid_request_error", param: "model", code: "model_not_found" } };
}
