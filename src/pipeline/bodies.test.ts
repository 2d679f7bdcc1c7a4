import { describe, expect, test } from "bun:test";
import { ProxyError } from "../errors.ts";
import { jsonInteger, type JsonObject } from "../json/json.ts";
import { NO_ROUTING } from "../routing/routing-request.ts";
import { contextBody, generationBody, generationFirstBody, needsGeneration, verifyContextAnswer, withoutHandOff } from "./bodies.ts";
import { contextLegRetryable, generationLegRetryable } from "./retry.ts";
import type { PipelineInput } from "./types.ts";

const chat: PipelineInput = {
  api: "chat",
  body: {
    model: "m",
    messages: [
      { role: "system", content: "s" },
      { role: "user", content: "u" },
    ],
    stream: true,
  },
  stream: true,
  routing: NO_ROUTING,
};

function contextAnswer(reason: string, params: JsonObject): JsonObject {
  return {
    id: "c",
    choices: [{ index: 0, finish_reason: reason, message: { role: "assistant", content: "x" }, disaggregated_params: params }],
    prompt_token_ids: [1, 2, 3],
  };
}

describe("worker bodies", () => {
  test("the context body asks for context_only under the request's id, not streamed, stream_options null", () => {
    const body = contextBody(chat, 42n, "context_first");
    expect(body["stream"]).toBe(false);
    expect(body["stream_options"]).toBeNull();
    expect(body["disaggregated_params"]).toEqual({ request_type: "context_only", disagg_request_id: jsonInteger(42n), schedule_style: 0 });
    expect(contextBody({ ...chat, api: "responses" }, 1n, "context_first")["stream_options"]).toBeUndefined();
  });

  test("gen_tokids_ctxbytes asks only a chat context leg for packed ids: a completions generation request cannot carry them", () => {
    const options = { tokenIdsAsBytes: true, stripMessageHistory: false };
    const paramsOf = (input: PipelineInput): JsonObject =>
      contextBody(input, 1n, "context_first", options)["disaggregated_params"] as JsonObject;
    expect(paramsOf(chat)["return_prompt_token_ids_b64"]).toBe(true);
    expect(paramsOf({ ...chat, api: "completions", body: { model: "m", prompt: "p" } })["return_prompt_token_ids_b64"]).toBeUndefined();
    expect(paramsOf({ ...chat, api: "responses", body: { model: "m", input: "p" } })["return_prompt_token_ids_b64"]).toBeUndefined();
  });

  test("a completions prompt of ids the context answer echoes stays the client's own list (sent as its bytes); other ids replace it", () => {
    const prompt = [1, 2, 3];
    const completions: PipelineInput = { api: "completions", body: { model: "m", prompt }, stream: false, routing: NO_ROUTING };
    const answer = contextAnswer("length", { ctx_request_id: 9 });
    expect(generationBody(completions, answer, 43n, "context_first")["prompt"]).toBe(prompt);
    const other = { ...answer, prompt_token_ids: [1, 2, 4] };
    expect(generationBody(completions, other, 43n, "context_first")["prompt"]).toEqual([1, 2, 4]);
    expect(generationBody({ ...completions, body: { model: "m", prompt: "text" } }, answer, 43n, "context_first")["prompt"]).toEqual([
      1, 2, 3,
    ]);
  });

  test("the generation body carries the hand-off verbatim, the prompt as token ids, optionally only the last message", () => {
    const answer = contextAnswer("length", { ctx_request_id: 9, opaque_state: "o" });
    const body = generationBody(chat, answer, 43n, "context_first", { tokenIdsAsBytes: false, stripMessageHistory: true });
    expect(body["disaggregated_params"]).toEqual({
      ctx_request_id: 9,
      opaque_state: "o",
      request_type: "generation_only",
      disagg_request_id: jsonInteger(43n),
      schedule_style: 0,
    });
    expect(body["prompt_token_ids"]).toEqual([1, 2, 3]);
    expect(body["messages"]).toEqual([{ role: "user", content: "u" }]);
  });

  test("the generation body carries the context answer's usage as ctx_usage; a Responses usage becomes a UsageInfo", () => {
    const usage = { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4, prompt_tokens_details: { cached_tokens: 2 } };
    const body = generationBody(chat, { ...contextAnswer("length", { ctx_request_id: 9 }), usage }, 43n, "context_first");
    expect(body["disaggregated_params"]).toMatchObject({ ctx_usage: usage });
    const responses: PipelineInput = { api: "responses", body: { model: "m", input: "hi" }, stream: false, routing: NO_ROUTING };
    const answer = {
      status: "incomplete",
      finish_reason: "length",
      disaggregated_params: { ctx_request_id: 9 },
      usage: { input_tokens: 3, output_tokens: 1, total_tokens: 4, input_tokens_details: { cached_tokens: 2 } },
    };
    expect(generationBody(responses, answer, 43n, "context_first")["disaggregated_params"]).toMatchObject({ ctx_usage: usage });
  });

  test("a Responses context answer continues by its top-level finish_reason, by its status when it has none", () => {
    expect(needsGeneration("responses", { status: "incomplete", finish_reason: "length" })).toBe(true);
    expect(needsGeneration("responses", { status: "incomplete", finish_reason: "not_finished" })).toBe(true);
    // finish_reason wins over status: a context phase that hit EOS is finished whatever its status says.
    expect(needsGeneration("responses", { status: "incomplete", finish_reason: "stop" })).toBe(false);
    expect(needsGeneration("responses", { status: "incomplete" })).toBe(true);
    expect(needsGeneration("responses", { status: "completed", finish_reason: null })).toBe(false);
  });

  test("generation first names the hand-off by id and takes the endpoint from the context worker's /server_info", () => {
    const body = generationFirstBody(chat, 7n, { disaggregated_params: { ctx_info_endpoint: ["tcp://c:1", "tcp://c:2"] } });
    expect(body["disaggregated_params"]).toMatchObject({
      request_type: "generation_only",
      ctx_request_id: jsonInteger(7n),
      schedule_style: 1,
      ctx_info_endpoint: "tcp://c:1",
    });
  });

  test("a context answer is checked as trtllm-serve does; a finished one needs no generation and loses its hand-off", () => {
    expect(verifyContextAnswer("chat", contextAnswer("length", { ctx_request_id: 9, disagg_request_id: 44 }), 42n)).toBe(44n);
    expect(() => verifyContextAnswer("chat", contextAnswer("length", { disagg_request_id: 44 }), 42n)).toThrow("ctx_request_id is missing");
    expect(() => verifyContextAnswer("chat", { choices: [] }, 42n)).toThrow("returned 0 choices");
    const finished = contextAnswer("stop", {});
    expect(needsGeneration("chat", finished)).toBe(false);
    expect(verifyContextAnswer("chat", finished, 42n)).toBe(42n);
    expect(withoutHandOff("chat", finished)).toEqual({
      id: "c",
      choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: "x" } }],
    });
  });
});

function error(code: ProxyError["code"], status: number, neverSent = false): ProxyError {
  return new ProxyError(code, status, "x", { neverSent });
}

describe("retry rules", () => {
  test("a context leg is retried on transport failures, timeouts, 408, 429 and 5xx only", () => {
    expect(
      [
        error("WORKER_UNREACHABLE", 502),
        error("WORKER_TIMEOUT", 504),
        error("WORKER_HTTP_ERROR", 429),
        error("WORKER_HTTP_ERROR", 503),
      ].every(contextLegRetryable),
    ).toBe(true);
    expect([error("WORKER_HTTP_ERROR", 400), error("WORKER_BAD_ANSWER", 502), error("CLIENT_GONE", 499)].some(contextLegRetryable)).toBe(
      false,
    );
  });

  test("a generation leg only when the request provably never reached the worker", () => {
    expect(generationLegRetryable(error("WORKER_UNREACHABLE", 502, true))).toBe(true);
    expect(generationLegRetryable(error("WORKER_UNREACHABLE", 502, false))).toBe(false);
    expect(generationLegRetryable(error("WORKER_TIMEOUT", 504, true))).toBe(false);
  });
});
