import { describe, expect, test } from "bun:test";
import type { JsonObject } from "../json/json.ts";
import { conversationIdOf, namedConversationOf, withConversationId, withSubagentConversationId } from "./conversation.ts";

describe("conversation ids", () => {
  test("the body's conversation_params win over session headers", () => {
    const body = { conversation_params: { conversation_id: "from-body" } };
    expect(conversationIdOf(body, new Headers({ "x-session-id": "from-header" }))).toBe("from-body");
    expect(withConversationId(body, new Headers({ "x-session-id": "from-header" }))).toBe(body);
  });

  test("the first non-empty session header in trtllm-serve's order names the conversation", () => {
    const headers = new Headers({ "x-correlation-id": "corr", "x-claude-code-session-id": "  ", "x-session-id": " sess " });
    expect(withConversationId({ model: "m" }, headers)).toEqual({ model: "m", conversation_params: { conversation_id: "sess" } });
  });

  test("without any, the body is unchanged", () => {
    const body = { model: "m" };
    expect(withConversationId(body, new Headers())).toBe(body);
  });

  test("without a header, Codex's prompt_cache_key, then client_metadata.thread_id, then client_metadata.session_id name it", () => {
    const codex = { prompt_cache_key: " thread-1 ", client_metadata: { thread_id: "thread-2", session_id: "run-3" } };
    expect(conversationIdOf(codex, new Headers())).toBe("thread-1");
    expect(conversationIdOf({ ...codex, prompt_cache_key: "  " }, new Headers())).toBe("thread-2");
    expect(conversationIdOf({ client_metadata: { thread_id: 7, session_id: "run-3" } }, new Headers())).toBe("run-3");
    expect(withConversationId({ model: "m", prompt_cache_key: "thread-1" }, new Headers())).toEqual({
      model: "m",
      prompt_cache_key: "thread-1",
      conversation_params: { conversation_id: "thread-1" },
    });
  });

  test("a session header wins over the client-native fields, and conversation_params over both, even without an id", () => {
    const body = { prompt_cache_key: "thread-1" };
    expect(conversationIdOf(body, new Headers({ "x-session-id": "sess" }))).toBe("sess");
    expect(conversationIdOf({ ...body, conversation_params: {} }, new Headers({ "x-session-id": "sess" }))).toBeUndefined();
  });

  test("of a body withConversationId returned, the conversation it names is its conversationIdOf, without reading the headers again", () => {
    const cases: [JsonObject, Record<string, string>, string | undefined][] = [
      [{ model: "m" }, {}, undefined],
      [{ model: "m" }, { "x-session-id": " sess " }, undefined],
      [{ prompt_cache_key: " thread-1 " }, { "thread-id": "t" }, undefined],
      [{ client_metadata: { session_id: "run-3" } }, { "session-id": "s" }, undefined],
      [{ conversation_params: {} }, { "x-session-id": "sess" }, undefined],
      [{ conversation_params: { conversation_id: "  " } }, {}, undefined],
      [{ model: "m" }, {}, "own"],
      [{ model: "m" }, { "claude-code-session-id": "cc" }, undefined],
    ];
    for (const [body, fields, own] of cases) {
      const headers = new Headers(fields);
      const named = withConversationId(body, headers, own);
      expect(namedConversationOf(named)).toBe(conversationIdOf(named, headers));
    }
  });

  test("a sub-agent without a conversation of its own gets a fresh subagent: id; one with an id keeps it", () => {
    const named = { conversation_params: { conversation_id: "child-a" } };
    expect(withSubagentConversationId(named)).toBe(named);
    const fresh = withSubagentConversationId({ model: "m" });
    const id = (fresh["conversation_params"] as { conversation_id: string }).conversation_id;
    expect(id).toMatch(/^subagent:[0-9a-f-]{36}$/);
    expect((withSubagentConversationId({ model: "m" })["conversation_params"] as { conversation_id: string }).conversation_id).not.toBe(id);
  });
});
