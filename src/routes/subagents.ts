/**
 * Sub-agents as real clients mark them, without a gateway header (real-clients.md, Codex 0.169,
 * Claude Code 2.1.328). A sub-agent keeps its own conversation id and is placed by its
 * parent's, the id its parent's requests are placed under:
 * - Codex: `x-codex-parent-thread-id` or `x-openai-subagent` (or `parent_thread_id` in
 *   `x-codex-turn-metadata`); its own thread is `client_metadata.thread_id` (else the
 *   `thread-id` header), while its `prompt_cache_key` stays its parent's session, which its
 *   parent is placed by (conversation.ts reads `prompt_cache_key` first).
 * - Claude Code: `x-claude-code-agent-id` beside the parent's `x-claude-code-session-id`; its
 *   own conversation is `<session>:<agent>`.
 * Headers are read with and without the `x-` prefix.
 */

import { isJsonObject, parseJsonOrUndefined, type JsonObject } from "../json/json.ts";

export interface ClientSubagent {
  /** The parent's conversation id: the sub-agent's routing key. */
  readonly parent: string;
  /** The sub-agent's own conversation id, when the client names one. */
  readonly conversationId: string | undefined;
}

/** The sub-agent a real client's request marks, if any. */
export function clientSubagentOf(body: JsonObject, headers: Headers): ClientSubagent | undefined {
  return codexSubagentOf(body, headers) ?? claudeCodeSubagentOf(headers);
}

function codexSubagentOf(body: JsonObject, headers: Headers): ClientSubagent | undefined {
  const turn = turnMetadataOf(headers);
  const parentThread = header(headers, CODEX_PARENT_THREAD) ?? stringOf(turn?.["parent_thread_id"]);
  if (parentThread === undefined && header(headers, OPENAI_SUBAGENT) === undefined) return undefined;
  const metadata = isJsonObject(body["client_metadata"]) ? body["client_metadata"] : {};
  const parent = stringOf(body["prompt_cache_key"]) ?? parentThread ?? stringOf(metadata["session_id"]) ?? header(headers, SESSION_ID);
  if (parent === undefined) return undefined;
  const own = stringOf(metadata["thread_id"]) ?? header(headers, THREAD_ID) ?? stringOf(turn?.["thread_id"]);
  return { parent, conversationId: own === parent ? undefined : own };
}

function claudeCodeSubagentOf(headers: Headers): ClientSubagent | undefined {
  const agent = header(headers, CLAUDE_CODE_AGENT);
  const session = header(headers, CLAUDE_CODE_SESSION);
  if (agent === undefined || session === undefined) return undefined;
  return { parent: session, conversationId: `${session}:${agent}` };
}

/** Codex's `x-codex-turn-metadata`, a JSON object in one header (bounded by the runtime's header limits). */
function turnMetadataOf(headers: Headers): JsonObject | undefined {
  const text = header(headers, CODEX_TURN_METADATA);
  const parsed = text === undefined ? undefined : parseJsonOrUndefined(text);
  return isJsonObject(parsed) ? parsed : undefined;
}

/** A header read with and without the `x-` prefix: both names, made once. */
type HeaderName = readonly [prefixed: string, bare: string];

function named(name: string): HeaderName {
  return [`x-${name}`, name];
}

const CODEX_PARENT_THREAD = named("codex-parent-thread-id");
const OPENAI_SUBAGENT = named("openai-subagent");
const SESSION_ID = named("session-id");
const THREAD_ID = named("thread-id");
const CLAUDE_CODE_AGENT = named("claude-code-agent-id");
const CLAUDE_CODE_SESSION = named("claude-code-session-id");
const CODEX_TURN_METADATA = named("codex-turn-metadata");

/** A header's trimmed value under `x-<name>` or `<name>`; none when blank. */
function header(headers: Headers, name: HeaderName): string | undefined {
  return stringOf(headers.get(name[0])) ?? stringOf(headers.get(name[1]));
}

function stringOf(value: unknown): string | undefined {
  return typeof value === "string" && value.trim() !== "" ? value.trim() : undefined;
}
