import { describe, expect, test } from "bun:test";
import type { JsonObject } from "../json/json.ts";
import { replayResponseEvents } from "./responses-replay.ts";

const decoder = new TextDecoder();

function finished(status: "completed" | "incomplete"): JsonObject {
  return {
    id: "resp_1_0123456789abcdef",
    object: "response",
    status,
    incomplete_details: status === "incomplete" ? { reason: "max_output_tokens" } : null,
    output: [
      {
        id: "msg_1",
        type: "message",
        role: "assistant",
        status: "completed",
        content: [{ type: "output_text", text: "Hi", annotations: [] }],
      },
    ],
    usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4 },
  };
}

function replayedText(response: JsonObject): string {
  return replayResponseEvents(response)
    .map((chunk) => decoder.decode(chunk))
    .join("");
}

/** Upstream's context-only replay (test_disagg_responses_api.py @ 1593a0d7, responses_done_generator). */
describe("a Responses request the context phase finished, replayed as a stream", () => {
  test("a response that ran to its end opens with response.created and ends with response.completed, never [DONE]", () => {
    const body = replayedText(finished("completed"));
    expect(body).toContain("event: response.completed");
    expect(body).not.toContain("[DONE]");
    expect(body.indexOf("response.created")).toBeLessThan(body.indexOf("response.completed"));
  });

  test("a response cut at max_output_tokens ends with response.incomplete carrying its reason", () => {
    const body = replayedText(finished("incomplete"));
    expect(body).toContain("event: response.incomplete");
    expect(body).not.toContain("event: response.completed");
    expect(body).toContain("max_output_tokens");
    expect(body).not.toContain("[DONE]");
    expect(body.indexOf("response.created")).toBeLessThan(body.indexOf("response.incomplete"));
  });

  test("every event is SSE-framed: an event line, a data line, a blank line", () => {
    for (const chunk of replayResponseEvents(finished("incomplete"))) {
      const text = decoder.decode(chunk);
      expect(text.startsWith("event: ")).toBe(true);
      expect(text).toContain("\ndata: ");
      expect(text.endsWith("\n\n")).toBe(true);
    }
  });
});
