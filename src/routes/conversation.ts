import { isJsonObject, type JsonObject } from "../json.ts";

/** Session headers that name a conversation, in trtllm-serve's order (reference §2.2 step 4). */
const SESSION_HEADERS = [
  "x-claude-code-session-id",
  "x-claude-session-id",
  "x-session-id",
  "x-correlation-id",
  "x-session-affinity",
  "x-multi-turn-session-id",
] as const;

/** The conversation a request belongs to: the body's own id wins over the headers. */
export function conversationIdOf(body: JsonObject, headers: Headers): string | undefined {
  const params = body["conversation_params"];
  const own = isJsonObject(params) ? params["conversation_id"] : undefined;
  if (typeof own === "string" && own.trim() !== "") return own;
  for (const name of SESSION_HEADERS) {
    const value = headers.get(name)?.trim();
    if (value) return value;
  }
  return undefined;
}

/** The body as both legs get it: a conversation named only by a header is named in the body too. */
export function withConversationId(body: JsonObject, headers: Headers): JsonObject {
  if (body["conversation_params"] !== undefined) return body;
  const id = conversationIdOf(body, headers);
  return id === undefined ? body : { ...body, conversation_params: { conversation_id: id } };
}
