import { isJsonObject, type JsonObject } from "../json/json.ts";
import { subagentAffinityHeaders } from "../security/disagg-auth.ts";
import type { Role } from "../config/types.ts";

/**
 * Sub-agent affinity (TensorRT-LLM #19175, docs/source/features/subagent-routing.md @ 83dd989e):
 * the parent session a gateway names in the configured header is the request's routing key. It
 * reaches workers only as signed headers (`x-trtllm-subagent-affinity-id` / `-auth`), never in
 * the body; the signature covers the attempt's id, so each attempt is signed again.
 */
export interface Affinity {
  /** The parent's session: the routing key. */
  readonly id: string;
  /** The sub-agent's own conversation id, as the body carries it (signed with the key). */
  readonly conversationId: string | null;
  readonly model: string;
}

/**
 * The body without a client's `conversation_params.subagent_affinity_id`: only the trusted
 * header may set a routing key, and upstream clears a client's whether the feature is on or
 * not (test_openai_disagg_server.py test_subagent_affinity_clears_client_supplied_routing_key,
 * read_file id 66084373096).
 */
export function withoutClientAffinity(body: JsonObject): JsonObject {
  const params = body["conversation_params"];
  if (!isJsonObject(params) || params["subagent_affinity_id"] === undefined) return body;
  const { subagent_affinity_id: _dropped, ...rest } = params;
  return { ...body, conversation_params: rest };
}

/** The parent session named by the configured header, trimmed; none when unset or blank (conversation_id.py extract_subagent_parent_id). */
export function parentSessionOf(headers: Headers, header: string | undefined): string | undefined {
  if (header === undefined) return undefined;
  const value = headers.get(header)?.trim();
  return value === undefined || value === "" ? undefined : value;
}

/** The affinity of a sub-agent request whose body already names its own conversation. */
export function affinityOf(parent: string, body: JsonObject): Affinity {
  const params = body["conversation_params"];
  const conversation = isJsonObject(params) ? params["conversation_id"] : undefined;
  const model = body["model"];
  return {
    id: parent,
    conversationId: typeof conversation === "string" ? conversation : null,
    model: typeof model === "string" ? model : "",
  };
}

/** The headers of one attempt of a leg. */
export function affinityHeaders(
  key: string | undefined,
  affinity: Affinity | undefined,
  role: Role,
  disaggRequestId: bigint,
): Record<string, string> {
  if (key === undefined || affinity === undefined) return {};
  return subagentAffinityHeaders(key, {
    role: role === "context" ? "CONTEXT" : "GENERATION",
    model: affinity.model,
    conversationId: affinity.conversationId,
    subagentAffinityId: affinity.id,
    requestType: role === "context" ? "context_only" : "generation_only",
    disaggRequestId,
  });
}
