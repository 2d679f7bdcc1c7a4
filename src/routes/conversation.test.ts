import { describe, expect, test } from "bun:test";
import { conversationIdOf, withConversationId } from "./conversation.ts";

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
});
