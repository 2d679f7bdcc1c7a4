import { describe, expect, test } from "bun:test";
import { contextOverflowOf } from "./context-overflow.ts";

describe("contextOverflowOf", () => {
  test("reads both counts from the OpenAI wording trtllm-serve uses since #19457", () => {
    const message =
      "This model's maximum context length is 8 tokens. However, your messages resulted in 9 tokens. Please reduce the length of the messages.";
    expect(contextOverflowOf(message, "context_length_exceeded")).toEqual({ promptTokens: 9, maxTokens: 8 });
  });

  test("reads the maximum alone when the prompt's count is worded otherwise", () => {
    expect(contextOverflowOf("This model's maximum context length is 4096 tokens.", 400)).toEqual({
      promptTokens: undefined,
      maxTokens: 4096,
    });
  });

  test("reads the PyTorch backend's max_num_tokens refusal, its float prompt length rounded", () => {
    const message = "The sum of prompt length (72417.0), query length (0) should not exceed max_num_tokens (69632)";
    expect(contextOverflowOf(message, 400)).toEqual({ promptTokens: 72417, maxTokens: 69632 });
  });

  test("reads the TensorRT backend's max_seq_len refusals, the output tokens counted in", () => {
    const current = "The sum of prompt length (4000.0) and query length (0) max_tokens (2048) should not exceed max_seq_len (4096)";
    expect(contextOverflowOf(current, 400)).toEqual({ promptTokens: 6048, maxTokens: 4096 });
    const older = "The sum of prompt length (4000) and max_tokens (200) should not exceed max_seq_len (4096)";
    expect(contextOverflowOf(older, 400)).toEqual({ promptTokens: 4200, maxTokens: 4096 });
  });

  test("reads the default_max_tokens refusal", () => {
    const message =
      "`default_max_tokens` (-40205) should be greater than 0, `default_max_tokens` (-40205) = max_seq_len (40961) - `splited_prompt_len` (81166) - `query_token_len` (0)";
    expect(contextOverflowOf(message, 400)).toEqual({ promptTokens: 81166, maxTokens: 40961 });
  });

  test("takes the code context_length_exceeded alone as an overflow without counts", () => {
    expect(contextOverflowOf("too long", "context_length_exceeded")).toEqual({ promptTokens: undefined, maxTokens: undefined });
  });

  test("leaves every other refusal alone", () => {
    expect(contextOverflowOf("Cannot read max_tokens: expected an integer of at least 1", 400)).toBeUndefined();
    expect(contextOverflowOf("prompt is too long", 400)).toBeUndefined();
    expect(contextOverflowOf("", undefined)).toBeUndefined();
  });
});
