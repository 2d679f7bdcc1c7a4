/**
 * The worker's checks of the proxy's internal signatures, as trtllm-serve's
 * tensorrt_llm/serve/disagg_auth.py makes them (read_file id 68525723387), when the worker has
 * an internal_request_auth_key:
 *
 * - `x-trtllm-disagg-auth` on a request whose `disaggregated_params` carry `encoded_opaque_state`
 *   or `ctx_info_endpoint` (validate_internal_disagg_request; without a key upstream only warns);
 * - `x-trtllm-subagent-affinity-id` / `-auth` (validate_subagent_affinity): an affinity hint needs
 *   a key and a valid signature bound to the worker's role, the model, the child's conversation
 *   id, the request type and the disagg_request_id.
 *
 * Written apart from the proxy's signer (src/security/), so a test where the emulated worker
 * accepts the proxy's headers checks the proxy against a second implementation.
 */

import { createHmac, timingSafeEqual } from "node:crypto";
import { isJsonObject, type JsonObject, type JsonValue } from "../../json/json.ts";
import type { WorkerRole } from "../types.ts";
import { WorkerError } from "./worker-error.ts";

const DISAGG_AUTH_HEADER = "x-trtllm-disagg-auth";
const AFFINITY_ID_HEADER = "x-trtllm-subagent-affinity-id";
const AFFINITY_AUTH_HEADER = "x-trtllm-subagent-affinity-auth";

/** Refuses a request whose internal signatures do not verify under `key` (400, upstream's words). */
export function checkInternalAuth(key: string | undefined, role: WorkerRole, body: JsonValue | undefined, headers: Headers): void {
  if (!isJsonObject(body)) return;
  const params = isJsonObject(body["disaggregated_params"]) ? body["disaggregated_params"] : undefined;
  checkHandoffSignature(key, params, headers);
  checkAffinitySignature(key, role, body, params, headers);
}

function checkHandoffSignature(key: string | undefined, params: JsonObject | undefined, headers: Headers): void {
  const state = params?.["encoded_opaque_state"] ?? null;
  const endpoint = params?.["ctx_info_endpoint"] ?? null;
  if ((state === null && endpoint === null) || key === undefined) return;
  const payload = { ctx_info_endpoint: Array.isArray(endpoint) ? (endpoint[0] ?? null) : endpoint, encoded_opaque_state: state };
  if (!sameSignature(headers.get(DISAGG_AUTH_HEADER), sign(key, payload))) {
    throw new WorkerError(400, "Invalid internal disaggregated request authentication");
  }
}

function checkAffinitySignature(
  key: string | undefined,
  configured: WorkerRole,
  body: JsonObject,
  params: JsonObject | undefined,
  headers: Headers,
): void {
  const requestType = params?.["request_type"];
  // A worker without a role of its own infers it from the request type; an aggregated request ignores the hint.
  const role = configured === "context" ? "CONTEXT" : configured === "generation" ? "GENERATION" : inferredRole(requestType);
  const affinityId = headers.get(AFFINITY_ID_HEADER)?.trim();
  if (role === undefined || affinityId === undefined || affinityId === "") return;
  if (key === undefined) throw new WorkerError(400, "Subagent affinity requires internal_request_auth_key");
  const conversation = isJsonObject(body["conversation_params"]) ? body["conversation_params"]["conversation_id"] : undefined;
  const payload = {
    purpose: AFFINITY_ID_HEADER,
    role,
    model: body["model"] ?? null,
    conversation_id: conversation ?? null,
    subagent_affinity_id: affinityId,
    request_type: requestType ?? null,
    disagg_request_id: params?.["disagg_request_id"] ?? null,
  };
  if (!sameSignature(headers.get(AFFINITY_AUTH_HEADER), sign(key, payload))) {
    throw new WorkerError(400, "Invalid internal subagent affinity authentication");
  }
}

function inferredRole(requestType: JsonValue | undefined): "CONTEXT" | "GENERATION" | undefined {
  if (requestType === "context_only") return "CONTEXT";
  if (requestType === "generation_only") return "GENERATION";
  return undefined;
}

function sign(key: string, payload: Record<string, JsonValue>): string {
  return `sha256=${createHmac("sha256", key).update(pythonDumps(payload), "utf8").digest("hex")}`;
}

/**
 * Python's json.dumps(payload, sort_keys=True, separators=(",", ":")) for a flat object of
 * strings, integers and nulls: keys sorted, no spaces, every character outside printable ASCII escaped (DEL too)
 * (ensure_ascii; an astral character as its two surrogates, as Python writes it).
 */
function pythonDumps(payload: Record<string, JsonValue>): string {
  const sorted = Object.fromEntries(
    Object.keys(payload)
      .toSorted()
      .map((name) => [name, payload[name]]),
  );
  return JSON.stringify(sorted).replace(/[\u007f-\uffff]/g, (char) => `\\u${char.charCodeAt(0).toString(16).padStart(4, "0")}`);
}

function sameSignature(provided: string | null, expected: string): boolean {
  if (provided === null) return false;
  const [a, b] = [Buffer.from(provided, "utf8"), Buffer.from(expected, "utf8")];
  return a.length === b.length && timingSafeEqual(a, b);
}
