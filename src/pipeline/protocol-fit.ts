import { isJsonObject, type JsonObject, type JsonValue } from "../json/json.ts";
import type { ProxyError } from "../errors.ts";
import type { Logger } from "../observability/logger.ts";
import { rejectedCapability, type Capability } from "../workers/protocol.ts";
import type { WorkerEntry } from "../workers/worker-pool.ts";
import { WORKER_PATH } from "./api-kind.ts";

/**
 * A worker-bound body cut to what the target worker's version accepts (workers/protocol.ts):
 * the pipeline builds the newest body, and each attempt's worker gets it without the fields
 * its request models would reject. Only fields present are looked at, and the body is copied
 * only when something changes, so a newest worker costs a few property reads.
 */
export function fitToWorker(body: JsonObject, accepts: ReadonlySet<Capability>): JsonObject {
  let out = body;
  const edit = (): JsonObject => (out === body ? (out = { ...body }) : out);
  let params = isJsonObject(body["disaggregated_params"]) ? body["disaggregated_params"] : undefined;
  const editParams = (): JsonObject => {
    const copy = params === body["disaggregated_params"] ? { ...params } : (params ?? {});
    params = copy;
    edit()["disaggregated_params"] = copy;
    return copy;
  };

  const conversation = body["conversation_params"];
  if (conversation !== undefined && !accepts.has("conversation_params")) {
    delete edit()["conversation_params"];
    const id = isJsonObject(conversation) ? conversation["conversation_id"] : undefined;
    // Before conversation_params the id travelled inside disaggregated_params (openai_disagg_service.py _get_ctx_request).
    if (params !== undefined && typeof id === "string" && accepts.has("disagg_conversation_id")) editParams()["conversation_id"] = id;
  }
  if (params !== undefined) {
    if (params["ctx_usage"] !== undefined && !accepts.has("ctx_usage")) delete editParams()["ctx_usage"];
    if (params["resolved_thinking"] !== undefined && !accepts.has("resolved_thinking")) delete editParams()["resolved_thinking"];
    if (params["return_prompt_token_ids_b64"] !== undefined && !accepts.has("prompt_token_ids_b64")) {
      delete editParams()["return_prompt_token_ids_b64"];
    }
  }
  if (body["injected_chat_template_kwargs"] !== undefined && !accepts.has("injected_chat_template_kwargs")) {
    delete edit()["injected_chat_template_kwargs"];
  }
  const packed = body["prompt_token_ids_b64"];
  if (packed !== undefined && !accepts.has("prompt_token_ids_b64")) {
    // A newer context worker packed the ids; an older generation worker takes them as a list.
    const copy = edit();
    delete copy["prompt_token_ids_b64"];
    if (typeof packed === "string") copy["prompt_token_ids"] = unpackTokenIds(packed);
  }
  return out;
}

/** prompt_token_ids_b64: little-endian int32 values, base64 (openai_protocol.py). */
export function unpackTokenIds(packed: string): JsonValue[] {
  const bytes = Buffer.from(packed, "base64");
  const count = Math.floor(bytes.length / 4);
  const ids: JsonValue[] = Array.from({ length: count });
  for (let i = 0; i < count; i++) ids[i] = bytes.readInt32LE(i * 4);
  return ids;
}

/** The capabilities a body built for the newest worker relies on (to name what a 400 rejected). */
export function capabilitiesUsed(body: JsonObject): Set<Capability> {
  const used = new Set<Capability>();
  const params = isJsonObject(body["disaggregated_params"]) ? body["disaggregated_params"] : undefined;
  if (body["conversation_params"] !== undefined) used.add("conversation_params");
  if (params?.["conversation_id"] !== undefined) used.add("disagg_conversation_id");
  if (params?.["ctx_usage"] !== undefined) used.add("ctx_usage");
  if (params?.["resolved_thinking"] !== undefined) used.add("resolved_thinking");
  if (params?.["return_prompt_token_ids_b64"] !== undefined || body["prompt_token_ids_b64"] !== undefined) used.add("prompt_token_ids_b64");
  if (body["injected_chat_template_kwargs"] !== undefined) used.add("injected_chat_template_kwargs");
  return used;
}

/**
 * A worker's 400 naming an optional field it was sent (pydantic extra="forbid"): its version
 * claimed a capability it lacks. That capability, if so (the caller drops it and retries).
 */
export function rejectedField(error: ProxyError, sent: JsonObject, path: string): Capability | undefined {
  if (error.code !== "WORKER_HTTP_ERROR" || error.status !== 400) return undefined;
  const used = capabilitiesUsed(sent);
  // Only ChatCompletionRequest has injected_chat_template_kwargs and prompt_token_ids_b64: a
  // request to another route refused for one says nothing of the worker's version.
  if (path !== WORKER_PATH.chat) {
    used.delete("injected_chat_template_kwargs");
    used.delete("prompt_token_ids_b64");
  }
  return rejectedCapability(error.message, used);
}

/** The capability goes off for that worker (logged once, since it is gone afterwards). */
export function dropField(logger: Logger, worker: WorkerEntry, capability: Capability): void {
  worker.protocol.accepts.delete(capability);
  logger.warn("worker rejected an optional field; no longer sending it to this worker", {
    worker: worker.origin,
    version: worker.protocol.version ?? "unknown",
    field: capability,
  });
}
