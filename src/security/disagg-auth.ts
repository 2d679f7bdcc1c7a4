/**
 * Signatures on internal proxy → worker requests, byte-compatible with trtllm-serve workers
 * configured with the same `internal_request_auth_key` (reference §1.11, disagg_auth.py):
 *
 * - `x-trtllm-disagg-auth: sha256=<hex>` on a generation request that carries the KV hand-off
 *   (`encoded_opaque_state` or `ctx_info_endpoint`), so a worker only opens transfers the proxy
 *   asked for;
 * - `x-trtllm-subagent-affinity-id` / `-auth` on context and generation requests that carry a
 *   sub-agent's parent-session routing key, signed with the destination and the child's identity.
 *
 * Both are HMAC-SHA256 under the UTF-8 bytes of the key, over Python-canonical JSON
 * (./python-json.ts). Test vectors: test/fixtures/hmac/make-vectors.py.
 */
import { createHmac } from "node:crypto";
import { isJsonObject, type JsonObject, type JsonValue, jsonInteger } from "../json/json.ts";
import { pythonCanonicalJson } from "./python-json.ts";

export { pythonCanonicalJson } from "./python-json.ts";

export const DISAGG_AUTH_HEADER = "x-trtllm-disagg-auth";
export const SUBAGENT_AFFINITY_ID_HEADER = "x-trtllm-subagent-affinity-id";
export const SUBAGENT_AFFINITY_AUTH_HEADER = "x-trtllm-subagent-affinity-auth";

const SIGNATURE_PREFIX = "sha256=";

/** `sha256=<lowercase hex>` HMAC-SHA256 of the message under the UTF-8 key. */
function sign(key: string, message: string): string {
  return SIGNATURE_PREFIX + createHmac("sha256", key).update(message, "utf8").digest("hex");
}

function requireKey(key: string, what: string): void {
  if (key === "") throw new RangeError(`Cannot sign ${what}: the internal auth key is empty`);
}

function orNull(value: JsonValue | undefined): JsonValue {
  return value === undefined ? null : value;
}

/** A list endpoint (as /server_info may report it) is signed as its first element. */
function canonicalEndpoint(endpoint: JsonValue | undefined): JsonValue {
  if (Array.isArray(endpoint)) return orNull(endpoint[0]);
  return orNull(endpoint);
}

/**
 * The `x-trtllm-disagg-auth` value for a request with these `disaggregated_params`:
 * `sha256=<lowercase hex>` over canonical JSON {"ctx_info_endpoint": <value, first element if
 * a list, or null>, "encoded_opaque_state": <value or null>}. Undefined when neither protected
 * field is non-null (no header is sent). Throws RangeError for an empty key.
 */
export function disaggAuthHeader(key: string, disaggregatedParams: JsonObject): string | undefined {
  const state = orNull(disaggregatedParams["encoded_opaque_state"]);
  const endpoint = orNull(disaggregatedParams["ctx_info_endpoint"]);
  if (state === null && endpoint === null) return undefined;
  requireKey(key, "a disaggregated request");
  const payload = { ctx_info_endpoint: canonicalEndpoint(endpoint), encoded_opaque_state: state };
  return sign(key, pythonCanonicalJson(payload));
}

/**
 * The `x-trtllm-disagg-auth` header of a worker request body, as headers to spread: empty when
 * no key is set, the body carries no `disaggregated_params`, or they hold no protected field.
 */
export function disaggAuthOf(key: string | undefined, body: JsonObject): Record<string, string> {
  const params = body["disaggregated_params"];
  if (key === undefined || !isJsonObject(params)) return {};
  const signature = disaggAuthHeader(key, params);
  return signature === undefined ? {} : { [DISAGG_AUTH_HEADER]: signature };
}

export interface SubagentAffinityFields {
  /** The destination: a context or a generation worker. */
  readonly role: "CONTEXT" | "GENERATION";
  /** The request body's `model`. */
  readonly model: string;
  /** The child's `conversation_params.conversation_id`; null when the request has none. */
  readonly conversationId: string | null;
  /** The parent-session routing key; surrounding whitespace is trimmed. */
  readonly subagentAffinityId: string;
  /** `disaggregated_params.request_type` of this leg (context_only / generation_only). */
  readonly requestType: string;
  /** `disaggregated_params.disagg_request_id` of this attempt: re-sign when a retry changes it. */
  readonly disaggRequestId: bigint;
}

/**
 * The sub-agent affinity headers for one worker request: the trimmed id and its signature over
 * canonical JSON {purpose, role, model, conversation_id, subagent_affinity_id, request_type,
 * disagg_request_id}. Empty when the id is blank. Throws RangeError for an empty key (upstream:
 * "Subagent affinity requires internal_request_auth_key").
 */
export function subagentAffinityHeaders(key: string, fields: SubagentAffinityFields): Record<string, string> {
  const affinityId = fields.subagentAffinityId.trim();
  if (affinityId === "") return {};
  requireKey(key, "a subagent affinity id");
  const payload: JsonObject = {
    purpose: SUBAGENT_AFFINITY_ID_HEADER,
    role: fields.role,
    model: fields.model,
    conversation_id: fields.conversationId,
    subagent_affinity_id: affinityId,
    request_type: fields.requestType,
    disagg_request_id: jsonInteger(fields.disaggRequestId),
  };
  return {
    [SUBAGENT_AFFINITY_ID_HEADER]: affinityId,
    [SUBAGENT_AFFINITY_AUTH_HEADER]: sign(key, pythonCanonicalJson(payload)),
  };
}
