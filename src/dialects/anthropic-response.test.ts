import { describe, expect, test } from "bun:test";
import { ProxyError } from "../errors.ts";
import type { JsonObject } from "../json/json.ts";
import {
  anthropicErrorBody,
  anthropicErrorFor,
  anthropicErrorMessage,
  toAnthropicMessage,
  workerErrorMessage,
} from "./anthropic-response.ts";

const ids = { newMessageId: () => "msg_1", newToolUseId: () => "toolu_gen" };
const usage = { prompt_tokens: 100, completion_tokens: 20, total_tokens: 120 };

function chat(message: JsonObject, finish: string | null = "stop", extra: JsonObject = {}): JsonObject {
  return {
    id: "chatcmpl-1",
    object: "chat.completion",
    model: "glm",
    choices: [{ index: 0, message, finish_reason: finish, ...extra }],
    usage,
  };
}

function stopOf(finish: string | null, extra: JsonObject = {}, calls: JsonObject[] = []) {
  const message = toAnthropicMessage(chat({ content: "x", tool_calls: calls }, finish, extra), ids);
  return [message["stop_reason"], message["stop_sequence"]];
}

const call = (id: string | null, name: string, args: string) => ({
  id,
  type: "function",
  function: { name, arguments: args },
});

describe("toAnthropicMessage", () => {
  test("a text answer becomes a message with end_turn and usage, null fields absent", () => {
    const message = toAnthropicMessage(chat({ role: "assistant", content: "Hi!", reasoning_content: null, tool_calls: [] }), ids);
    expect(message).toEqual({
      id: "msg_1",
      type: "message",
      role: "assistant",
      model: "glm",
      content: [{ type: "text", text: "Hi!" }],
      stop_reason: "end_turn",
      usage: { input_tokens: 100, output_tokens: 20 },
    });
  });

  test("content comes in the order thinking, text, tool_use, and tool_use sets the stop reason", () => {
    const answer = chat(
      {
        role: "assistant",
        reasoning: "think",
        content: "Let me look.",
        tool_calls: [call("call_1", "Read", '{"file_path":"/a"}'), call(null, "Glob", "{}")],
      },
      "stop",
    );
    const message = toAnthropicMessage(answer, ids);
    expect(message["content"]).toEqual([
      { type: "thinking", thinking: "think" },
      { type: "text", text: "Let me look." },
      { type: "tool_use", id: "call_1", name: "Read", input: { file_path: "/a" } },
      { type: "tool_use", id: "toolu_gen", name: "Glob", input: {} },
    ]);
    expect(message["stop_reason"]).toBe("tool_use");
  });

  test("reasoning_content wins over reasoning", () => {
    const message = toAnthropicMessage(chat({ reasoning_content: "a", reasoning: "b", content: null }), ids);
    expect(message["content"]).toEqual([{ type: "thinking", thinking: "a" }]);
  });

  test("stop reasons map; a truncated tool turn stays max_tokens; a matched stop string is reported", () => {
    expect(stopOf("length")).toEqual(["max_tokens", undefined]);
    expect(stopOf("tool_calls")).toEqual(["tool_use", undefined]);
    expect(stopOf("stop", { stop_reason: "###" })).toEqual(["stop_sequence", "###"]);
    expect(stopOf("stop", { stop_reason: 151_645 })).toEqual(["end_turn", undefined]);
    expect(stopOf("abort")).toEqual(["end_turn", undefined]);
    expect(stopOf(null)).toEqual(["end_turn", undefined]);
    expect(stopOf("length", {}, [call("c", "x", "{}")])).toEqual(["max_tokens", undefined]);
    expect(stopOf("stop", { stop_reason: "###" }, [call("c", "x", "{}")])).toEqual(["tool_use", undefined]);
  });

  test("an empty answer still has one empty text block", () => {
    expect(toAnthropicMessage(chat({ content: "" }), ids)["content"]).toEqual([{ type: "text", text: "" }]);
    expect(toAnthropicMessage({ model: "glm", choices: [] }, ids)).toMatchObject({
      content: [{ type: "text", text: "" }],
      usage: { input_tokens: 0, output_tokens: 0 },
    });
  });

  test("cached prompt tokens are reported apart from input tokens, never below zero", () => {
    const cached = {
      ...chat({ content: "x" }),
      usage: { prompt_tokens: 100, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 64 } },
    };
    expect(toAnthropicMessage(cached, ids)["usage"]).toEqual({
      input_tokens: 36,
      output_tokens: 5,
      cache_read_input_tokens: 64,
    });
    const odd = {
      ...chat({ content: "x" }),
      usage: { prompt_tokens: 10, completion_tokens: 5, prompt_tokens_details: { cached_tokens: 64 } },
    };
    expect(toAnthropicMessage(odd, ids)["usage"]).toEqual({
      input_tokens: 0,
      output_tokens: 5,
      cache_read_input_tokens: 64,
    });
  });

  test("tool arguments that are not a JSON object are a 500 api error", () => {
    for (const args of ["[1, 2]", "not json", "", '"str"']) {
      const error = (() => {
        try {
          toAnthropicMessage(chat({ content: null, tool_calls: [call("c", "Read", args)] }), ids);
        } catch (thrown) {
          return thrown;
        }
        return undefined;
      })();
      expect(error).toBeInstanceOf(ProxyError);
      expect(error).toMatchObject({ status: 500, message: "Internal server error" });
    }
  });

  test("large integers in tool arguments survive exactly", () => {
    const message = toAnthropicMessage(chat({ content: null, tool_calls: [call("c", "x", '{"id": 12345678901234567890}')] }), ids);
    expect(JSON.stringify(message["content"])).toContain('"input":{"id":12345678901234567890}');
  });
});

describe("Anthropic errors", () => {
  test("a context overflow is Anthropic's 'prompt is too long', its counts when the worker gave them, its text when not", () => {
    const counted = new ProxyError("CONTEXT_OVERFLOW", 400, "This model's maximum context length is 8 tokens.", {
      overflow: { promptTokens: 9, maxTokens: 8 },
    });
    expect(anthropicErrorFor(counted)).toEqual({
      status: 400,
      body: { type: "error", error: { type: "invalid_request_error", message: "prompt is too long: 9 tokens > 8 maximum" } },
    });
    const uncounted = new ProxyError("CONTEXT_OVERFLOW", 400, "too long for http://10.0.0.7:8001", {
      overflow: { promptTokens: undefined, maxTokens: 8 },
    });
    expect(anthropicErrorMessage(uncounted)).toBe("prompt is too long: too long for <url>");
  });

  test("the error type follows the status class", () => {
    expect(anthropicErrorBody(400, "bad")).toEqual({
      type: "error",
      error: { type: "invalid_request_error", message: "bad" },
    });
    expect(anthropicErrorBody(422, "x")).toMatchObject({ error: { type: "invalid_request_error" } });
    expect(anthropicErrorBody(500, "x")).toMatchObject({ error: { type: "api_error" } });
    expect(anthropicErrorBody(502, "x")).toMatchObject({ error: { type: "api_error" } });
  });

  test("statuses Anthropic clients handle specially get Anthropic's own types", () => {
    expect(anthropicErrorBody(503, "x")).toMatchObject({ error: { type: "overloaded_error" } });
    expect(anthropicErrorBody(529, "x")).toMatchObject({ error: { type: "overloaded_error" } });
    expect(anthropicErrorBody(429, "x")).toMatchObject({ error: { type: "rate_limit_error" } });
    expect(anthropicErrorBody(413, "x")).toMatchObject({ error: { type: "request_too_large" } });
    expect(anthropicErrorBody(404, "x")).toMatchObject({ error: { type: "not_found_error" } });
    expect(anthropicErrorBody(403, "x")).toMatchObject({ error: { type: "permission_error" } });
  });

  test("a worker error body gives its message from error.message, message or detail", () => {
    expect(workerErrorMessage('{"error":{"message":"too long","type":"BadRequestError","code":400}}')).toBe("too long");
    expect(workerErrorMessage('{"object":"error","message":"maximum context length is 8192 tokens","code":400}')).toBe(
      "maximum context length is 8192 tokens",
    );
    expect(workerErrorMessage('{"detail":"Internal server error boom"}')).toBe("Internal server error boom");
    expect(workerErrorMessage('{"detail":[{"loc":["body","x"],"msg":"field required"},{"msg":"bad"}]}')).toBe("field required; bad");
    expect(workerErrorMessage('{"error":"plain"}')).toBe("plain");
    expect(workerErrorMessage(new TextEncoder().encode('Server said: {"message":"nope"}'))).toBe("nope");
  });

  test("a worker error body never leaks an address and raw text is never used", () => {
    const message = workerErrorMessage('{"detail":"Cannot connect to http://10.0.0.5:8001/v1/chat (10.0.0.5:8001) or [::1]:9000"}');
    expect(message).toBe("Cannot connect to <url> (<address>) or <address>");
    expect(workerErrorMessage("<html>502 Bad Gateway at 10.1.1.1</html>")).toBeUndefined();
    expect(workerErrorMessage('{"other":1}')).toBeUndefined();
  });

  test("a failure keeps its status and carries the worker's own message when it has one", () => {
    const body = new TextEncoder().encode('{"object":"error","message":"prompt too long","code":400}');
    const fromWorker = new ProxyError("WORKER_HTTP_ERROR", 400, "Worker answered 400", {
      workerAnswer: { status: 400, contentType: "application/json", body },
    });
    expect(anthropicErrorFor(fromWorker)).toEqual({ status: 400, body: anthropicErrorBody(400, "prompt too long") });
    const proxySide = new ProxyError("NO_WORKER", 503, "No generation worker is available");
    expect(anthropicErrorFor(proxySide)).toEqual({
      status: 529,
      body: { type: "error", error: { type: "overloaded_error", message: "No generation worker is available" } },
    });
    expect(anthropicErrorMessage(new ProxyError("WORKER_UNREACHABLE", 502, "Cannot reach http://h:1/x"))).toBe("Cannot reach <url>");
  });
});
