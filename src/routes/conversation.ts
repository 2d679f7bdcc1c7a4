import { isJsonObject, type JsonObject, type JsonValue } from "../json/json.ts";

/**
 * Session headers that name a conversation, in trtllm-serve's order (reference §2.2 step 4;
 * tensorrt_llm/serve/conversation_id.py CONVERSATION_ID_HEADERS, read_file id 66490360002).
 */
const SESSION_HEADERS = [
  "x-claude-code-session-id",
  "x-claude-session-id",
  "x-session-id",
  "x-correlation-id",
  "x-session-affinity",
  "x-multi-turn-session-id",
] as const;

/**
 * Body fields of clients that speak no session header, consulted after the headers, in
 * trtllm-serve's order (conversation_id.py CONVERSATION_ID_BODY_FIELDS, read_file id
 * 66490360002). Codex sets `prompt_cache_key` to its thread id over the Responses API, and
 * `client_metadata.thread_id` over chat; `client_metadata.session_id` is one Codex run, which
 * may hold several threads, so it comes last.
 */
/**
 * Session headers as real clients send them without the `x-` prefix, consulted after the body
 * fields (not upstream's): Codex 0.169 sends `thread-id` and `session-id` (real-clients.md),
 * the thread first as the narrower; then the other upstream spellings unprefixed.
 */
const UNPREFIXED_HEADERS = [
  "thread-id",
  "claude-code-session-id",
  "claude-session-id",
  "session-id",
  "correlation-id",
  "session-affinity",
  "multi-turn-session-id",
] as const;

const BODY_FIELDS: readonly (readonly string[])[] = [
  ["prompt_cache_key"],
  ["client_metadata", "thread_id"],
  ["client_metadata", "session_id"],
];

/**
 * The conversation a request belongs to, as trtllm-serve's resolve_request_conversation_id:
 * a body that has `conversation_params` names it there (or names none); otherwise the first
 * non-empty session header; otherwise the first non-empty client-native body field; otherwise
 * (not upstream's) the first session header a client sends without the `x-` prefix.
 */
export function conversationIdOf(body: JsonObject, headers: Headers): string | undefined {
  if (isJsonObject(body["conversation_params"])) return namedConversationOf(body);
  for (const name of SESSION_HEADERS) {
    const value = headers.get(name)?.trim();
    if (value) return value;
  }
  for (const path of BODY_FIELDS) {
    const value = fieldAt(body, path);
    if (typeof value === "string" && value.trim() !== "") return value.trim();
  }
  for (const name of UNPREFIXED_HEADERS) {
    const value = headers.get(name)?.trim();
    if (value) return value;
  }
  return undefined;
}

/** The value at `path` in `body`; undefined where the path leaves the objects. */
function fieldAt(body: JsonObject, path: readonly string[]): JsonValue | undefined {
  let at: JsonValue | undefined = body;
  for (const name of path) at = isJsonObject(at) ? at[name] : undefined;
  return at;
}

/**
 * The conversation `conversation_params` names. Of a body withConversationId returned, this is
 * its conversationIdOf, the headers and client fields already read once.
 */
export function namedConversationOf(body: JsonObject): string | undefined {
  const params = body["conversation_params"];
  const own = isJsonObject(params) ? params["conversation_id"] : undefined;
  return typeof own === "string" && own.trim() !== "" ? own : undefined;
}

/**
 * The body as both legs get it: a conversation named only by a header or a client field is named
 * in the body too. `own`: a client's sub-agent names its own conversation (subagents.ts), which
 * its headers and fields, its parent's, do not.
 */
export function withConversationId(body: JsonObject, headers: Headers, own?: string): JsonObject {
  if (isJsonObject(body["conversation_params"])) return body;
  const id = own ?? conversationIdOf(body, headers);
  return id === undefined ? body : { ...body, conversation_params: { conversation_id: id } };
}

/**
 * A sub-agent's body names a conversation of its own: one with none gets a fresh
 * `subagent:<uuid>`, so its history stays apart from its parent's while it is placed by the
 * parent's session (test_openai_disagg_server.py test_subagent_affinity_parent_only_synthesizes_own_id,
 * read_file id 66084373096).
 */
export function withSubagentConversationId(body: JsonObject): JsonObject {
  const params = body["conversation_params"];
  const own = isJsonObject(params) ? params["conversation_id"] : undefined;
  if (typeof own === "string" && own.trim() !== "") return body;
  return { ...body, conversation_params: { ...(isJsonObject(params) ? params : {}), conversation_id: `subagent:${crypto.randomUUID()}` } };
}
