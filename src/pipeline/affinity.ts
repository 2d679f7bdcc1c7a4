import { badRequest } from "../errors.ts";
import { isJsonObject, type JsonObject } from "../json.ts";
import { subagentAffinityHeaders } from "../security/disagg-auth.ts";
import type { Role } from "../config/types.ts";

/**
 * Sub-agent affinity (reference §1.11): `conversation_params.subagent_affinity_id` travels to
 * both legs as signed headers, never in the body; the signature covers the attempt's id.
 */
export interface Affinity {
  readonly id: string;
  readonly conversationId: string | null;
  readonly model: string;
}

/** Takes the affinity id out of the body; refuses it when no key can sign it. */
export function takeAffinity(body: JsonObject, key: string | undefined): { body: JsonObject; affinity: Affinity | undefined } {
  const params = body["conversation_params"];
  if (!isJsonObject(params) || params["subagent_affinity_id"] === undefined) return { body, affinity: undefined };
  const { subagent_affinity_id: raw, ...rest } = params;
  const id = typeof raw === "string" ? raw.trim() : "";
  const forwarded = { ...body, conversation_params: rest };
  if (id === "") return { body: forwarded, affinity: undefined };
  if (key === undefined) throw badRequest("Subagent affinity requires internal_request_auth_key on this server");
  const conversation = rest["conversation_id"];
  const model = body["model"];
  return {
    body: forwarded,
    affinity: { id, conversationId: typeof conversation === "string" ? conversation : null, model: typeof model === "string" ? model : "" },
  };
}

/** The headers of one attempt of a leg. */
export function affinityHeaders(key: string | undefined, affinity: Affinity | undefined, role: Role, disaggRequestId: bigint): Record<string, string> {
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
