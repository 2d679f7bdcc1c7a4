import { describe, expect, test } from "bun:test";
import { jsonInteger, readInteger } from "../../json/json.ts";
import { startEmulatedWorker } from "../index.ts";
import { decodeOpaqueState } from "./opaque-state.ts";
import { at, json, post, stringAt } from "../test-support.ts";
import { tokenId, tokenize } from "./tokenizer.ts";

/** Beyond 2^53: a plain JSON.parse would round it. */
const BIG_ID = 9_223_372_036_854_775_001n;

function contextParams(disaggRequestId: bigint, scheduleStyle = 0) {
  return { request_type: "context_only", disagg_request_id: jsonInteger(disaggRequestId), schedule_style: scheduleStyle };
}

describe("context_only", () => {
  test("a chat request gets one token, its prompt tokens and the hand-off, echoing a 63-bit id exactly", async () => {
    await using worker = startEmulatedWorker({ role: "context" });
    const prompt = "tell me a story [[emu tokens=5 cached=2]]";
    const response = await post(worker.url, "/v1/chat/completions", {
      model: "any",
      messages: [{ role: "user", content: prompt }],
      max_completion_tokens: 10,
      stream: false,
      stream_options: null,
      disaggregated_params: contextParams(BIG_ID),
    });
    expect(response.status).toBe(200);
    const text = await response.clone().text();
    expect(text).toContain(`"disagg_request_id":${BIG_ID}`);
    expect(text).toContain(`"ctx_request_id":${BIG_ID}`);
    const body = await json(response);
    expect(at(body, "object")).toBe("chat.completion");
    expect(at(body, "choices", 0, "message", "content")).toBe(" tok1");
    expect(at(body, "choices", 0, "finish_reason")).toBe("length");
    expect(at(body, "prompt_token_ids")).toEqual(tokenize(prompt));
    expect(at(body, "usage")).toEqual({
      prompt_tokens: 7,
      total_tokens: 8,
      completion_tokens: 1,
      prompt_tokens_details: { cached_tokens: 2 },
    });
    const params = at(body, "choices", 0, "disaggregated_params");
    expect(at(params, "request_type")).toBe("context_only");
    expect(at(params, "first_gen_tokens")).toEqual([tokenId("tok1")]);
    expect(readInteger(at(params, "ctx_request_id"))).toBe(BIG_ID);
    expect(readInteger(at(params, "disagg_request_id"))).toBe(BIG_ID);
    expect(at(params, "draft_tokens")).toBeNull();
    expect(at(params, "ctx_dp_rank")).toBe(0);
    expect(at(params, "ctx_info_endpoint")).toBe(worker.url);
    expect(at(params, "schedule_style")).toBe(0);
    const state = decodeOpaqueState(stringAt(params, "encoded_opaque_state"));
    expect(state).toEqual({ worker: worker.url, disaggRequestId: BIG_ID, promptTokens: 7, directives: "[[emu tokens=5 cached=2]]" });
    expect(worker.requests[0]?.disaggRequestId).toBe(BIG_ID);
    expect(worker.requests[0]?.phase).toBe("context");
  });

  test("a completions request carries the hand-off in its choice and the ids at the top level", async () => {
    await using worker = startEmulatedWorker({ role: "context" });
    const body = await json(
      await post(worker.url, "/v1/completions", { prompt: "one two three", disaggregated_params: contextParams(7n) }),
    );
    expect(at(body, "object")).toBe("text_completion");
    expect(at(body, "choices", 0, "text")).toBe(" tok1");
    expect(at(body, "choices", 0, "disaggregated_params", "request_type")).toBe("context_only");
    expect(at(body, "prompt_token_ids")).toEqual(tokenize("one two three"));
  });

  test("a Responses request answers an incomplete response with top-level hand-off, named after request_id", async () => {
    await using worker = startEmulatedWorker({ role: "context" });
    const response = await post(worker.url, "/v1/responses", {
      input: "hi there",
      request_id: `resp_${BIG_ID}_0123456789abcdef`,
      disaggregated_params: contextParams(BIG_ID),
    });
    expect(response.headers.get("x-trtllm-engine-request-id")).toBe(BIG_ID.toString());
    const body = await json(response);
    expect(at(body, "id")).toBe(`resp_${BIG_ID}_0123456789abcdef`);
    expect(at(body, "object")).toBe("response");
    expect(at(body, "status")).toBe("incomplete");
    expect(at(body, "incomplete_details")).toEqual({ reason: "max_output_tokens" });
    expect(at(body, "output", 0, "content", 0, "text")).toBe(" tok1");
    expect(readInteger(at(body, "disaggregated_params", "disagg_request_id"))).toBe(BIG_ID);
    expect(at(body, "prompt_token_ids")).toEqual(tokenize("hi there"));
  });

  test("a request that ends in prefill finishes with stop (completed for Responses)", async () => {
    await using worker = startEmulatedWorker({ role: "context" });
    const chat = await json(
      await post(worker.url, "/v1/chat/completions", {
        messages: [{ role: "user", content: "x" }],
        max_tokens: 1,
        disaggregated_params: contextParams(1n),
      }),
    );
    expect(at(chat, "choices", 0, "finish_reason")).toBe("stop");
    const responses = await json(
      await post(worker.url, "/v1/responses", { input: "x [[emu ctx.finish=stop]]", disaggregated_params: contextParams(2n) }),
    );
    expect(at(responses, "status")).toBe("completed");
  });

  test("a streamed context_only request is refused with 400 in the worker's error envelope", async () => {
    await using worker = startEmulatedWorker({ role: "context" });
    const response = await post(worker.url, "/v1/chat/completions", {
      messages: [{ role: "user", content: "x" }],
      stream: true,
      disaggregated_params: contextParams(1n),
    });
    expect(response.status).toBe(400);
    expect(await json(response)).toEqual({
      object: "error",
      message: "A context_only request cannot stream: stream must be false",
      type: "BadRequestError",
      param: null,
      code: 400,
    });
  });

  test("a generation worker refuses a context_only request", async () => {
    await using worker = startEmulatedWorker({ role: "generation" });
    const response = await post(worker.url, "/v1/completions", { prompt: "x", disaggregated_params: contextParams(1n) });
    expect(response.status).toBe(400);
    expect(stringAt(await json(response), "message")).toContain("generation role");
  });

  test("the prefill takes prefill_ms before the answer", async () => {
    await using worker = startEmulatedWorker({ role: "context" });
    const started = performance.now();
    await post(worker.url, "/v1/completions", { prompt: "x [[emu prefill_ms=40]]", disaggregated_params: contextParams(1n) });
    expect(performance.now() - started).toBeGreaterThanOrEqual(39);
  });

  test("prompt token ids come packed in base64 when the proxy asks for them so", async () => {
    await using worker = startEmulatedWorker({ role: "context" });
    const body = await json(
      await post(worker.url, "/v1/chat/completions", {
        messages: [{ role: "user", content: "a b" }],
        disaggregated_params: { ...contextParams(1n), return_prompt_token_ids_b64: true },
      }),
    );
    expect(at(body, "prompt_token_ids")).toBeUndefined();
    const packed = Buffer.from(stringAt(body, "prompt_token_ids_b64"), "base64");
    expect([packed.readInt32LE(0), packed.readInt32LE(4)]).toEqual(tokenize("a b"));
  });
});
