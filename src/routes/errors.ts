import { errorType } from "../dialects/openai.ts";
import type { ProxyError } from "../errors.ts";

/** Seconds a refused client is told to wait before trying again (draining, overload). */
export const RETRY_AFTER_S = 5;

/** Headers of an error answer: a refused client (draining) is told when to come back. */
export function errorHeaders(error: ProxyError, headers?: Headers): Headers {
  const out = new Headers(headers);
  if (error.code === "DRAINING" || error.code === "OVERLOADED" || error.code === "WORKERS_BUSY")
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
 * A failure as an HTTP answer in OpenAI's dialect: a worker's own error answer keeps its
 * status and body; the proxy's errors use the envelope trtllm-serve workers use.
 */
export function openAiErrorResponse(error: ProxyError, headers?: Headers): Response {
  const out = errorHeaders(error, headers);
  const answer = error.workerAnswer;
  if (answer && answer.status === error.status) {
    out.set("content-type", answer.contentType);
    return new Response(answer.body, { status: answer.status, headers: out });
  }
  out.set("content-type", "application/json");
  if (error.code === "MODEL_NOT_FOUND")
    return new Response(JSON.stringify(modelNotFoundBody(error)), { status: error.status, headers: out });
  const body = { object: "error", message: error.message, type: errorType(error.status), param: null, code: error.status };
  return new Response(JSON.stringify(body), { status: error.status, headers: out });
}

/**
 * A model no worker serves, in OpenAI's own envelope (what its SDKs and Codex read as
 * `model_not_found`), since no trtllm-serve worker ever refuses a model: it serves one.
 */
function modelNotFoundBody(error: ProxyError): { error: { message: string; type: string; param: string; code: string } } {
  return { error: { message: error.message, type: "invalid_request_error", param: "model", code: "model_not_found" } };
}
