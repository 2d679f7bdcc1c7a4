import { describe, expect, test } from "bun:test";
import { isJsonObject, jsonInteger, type JsonObject } from "../../json/json.ts";
import { startEmulatedWorker } from "../index.ts";
import { encodeOpaqueState } from "./opaque-state.ts";
import { at, json, post, ssePayloads, stringAt } from "../test-support.ts";
import { tokenize } from "./tokenizer.ts";

const D = 9_007_199_254_740_993n; // 2^53 + 1

/** The generation request the proxy builds from a context answer (§2.5 step 6). */
function generationBody(api: "chat" | "completions" | "responses", client: JsonObject, contextAnswer: JsonObject): JsonObject {
  const params = api === "responses" ? at(contextAnswer, "disaggregated_params") : at(contextAnswer, "choices", 0, "disaggregated_params");
  if (!isJsonObject(params)) throw new TypeError("The context answer has no disaggregated_params");
  const carried = { ...params, request_type: "generation_only", ctx_usage: at(contextAnswer, "usage") ?? null };
  const ids = at(contextAnswer, "prompt_token_ids") ?? null;
  if (api === "completions") return { ...client, prompt: ids, disaggregated_params: carried };
  return { ...client, prompt_token_ids: ids, disaggregated_params: carried };
}

async function askContext(url: string, path: string, client: JsonObject): Promise<JsonObject> {
  const params = { request_type: "context_only", disagg_request_id: jsonInteger(D), schedule_style: 0 };
  return json(await post(url, path, { ...client, stream: false, stream_options: null, disaggregated_params: params }));
}

describe("generation_only, context first", () => {
  test("a chat stream continues from the first token the context phase produced", async () => {
    await using context = startEmulatedWorker({ role: "context" });
    await using generation = startEmulatedWorker({ role: "generation" });
    const client = {
      messages: [{ role: "user", content: "go [[emu tokens=3 cached=1]]" }],
      stream: true,
      stream_options: { include_usage: true },
    };
    const answer = await askContext(context.url, "/v1/chat/completions", client);
    const response = await post(generation.url, "/v1/chat/completions", generationBody("chat", client, answer));
    expect(response.status).toBe(200);
    const chunks = ssePayloads(await response.text());
    const deltas = chunks.map((chunk) => at(chunk, "choices", 0, "delta", "content")).filter((c) => c !== undefined);
    expect(deltas).toEqual(["", " tok1", " tok2", " tok3"]);
    expect(at(chunks[1], "choices", 0, "delta", "content")).toBe(" tok1");
    expect(at(chunks.at(-2), "choices", 0, "finish_reason")).toBe("stop");
    expect(at(chunks.at(-1), "usage")).toEqual({
      prompt_tokens: 4,
      total_tokens: 7,
      completion_tokens: 3,
      prompt_tokens_details: { cached_tokens: 1 },
    });
    expect(generation.requests[0]).toMatchObject({ phase: "generation", disaggRequestId: D, status: "finished" });
  });

  test("a completions request with the prompt as token ids gets the whole answer, directives carried over", async () => {
    await using context = startEmulatedWorker({ role: "context" });
    await using generation = startEmulatedWorker({ role: "generation" });
    const client = { prompt: "count [[emu gen.tokens=4]]", max_tokens: 3 };
    const answer = await askContext(context.url, "/v1/completions", client);
    const body = await json(await post(generation.url, "/v1/completions", generationBody("completions", client, answer)));
    expect(at(body, "choices", 0, "text")).toBe(" tok1 tok2 tok3");
    expect(at(body, "choices", 0, "finish_reason")).toBe("length");
  });

  test("a Responses stream carries the full worker event sequence under the request's id", async () => {
    await using context = startEmulatedWorker({ role: "context" });
    await using generation = startEmulatedWorker({ role: "generation" });
    const client = { input: "hello [[emu tokens=2]]", request_id: "resp_42_abcdef0123456789", stream: true };
    const answer = await askContext(context.url, "/v1/responses", client);
    const response = await post(generation.url, "/v1/responses", generationBody("responses", client, answer));
    expect(response.headers.get("x-trtllm-engine-request-id")).toBe(D.toString());
    const events = ssePayloads(await response.text());
    expect(events.map((event) => at(event, "sequence_number"))).toEqual(events.map((_, i) => i));
    expect(at(events[0], "response", "id")).toBe("resp_42_abcdef0123456789");
    expect(at(events.at(-1), "response", "output", 0, "content", 0, "text")).toBe(" tok1 tok2");
  });
});

describe("generation_only validation", () => {
  const chatClient = { messages: [{ role: "user", content: "a b c" }] };
  const goodParams = {
    request_type: "generation_only",
    first_gen_tokens: [1234],
    ctx_request_id: jsonInteger(D),
    disagg_request_id: jsonInteger(D),
    encoded_opaque_state: encodeOpaqueState({ worker: "http://ctx", disaggRequestId: D, promptTokens: 3, directives: "" }),
    schedule_style: 0,
  };
  const goodBody = { ...chatClient, prompt_token_ids: tokenize("a b c"), disaggregated_params: goodParams };
  const cases: [string, JsonObject, string][] = [
    ["first_gen_tokens is missing", { ...goodParams, first_gen_tokens: null }, "first_gen_tokens must be a non-empty list"],
    ["first_gen_tokens is empty", { ...goodParams, first_gen_tokens: [] }, "first_gen_tokens must be a non-empty list"],
    ["ctx_request_id is missing", { ...goodParams, ctx_request_id: null }, "ctx_request_id is missing"],
    ["encoded_opaque_state is missing", { ...goodParams, encoded_opaque_state: null }, "encoded_opaque_state is missing"],
    ["encoded_opaque_state is foreign", { ...goodParams, encoded_opaque_state: "bm90IG91cnM=" }, "not the state a context worker returned"],
    ["the state belongs to another request", { ...goodParams, disagg_request_id: 5 }, `belongs to disagg_request_id ${D}, not 5`],
  ];

  test("a well-formed request passes validation, then fails its KV transfer when the context worker it names holds none", async () => {
    await using context = startEmulatedWorker({ role: "context" });
    await using generation = startEmulatedWorker({ role: "generation" });
    const state = encodeOpaqueState({ worker: context.url, disaggRequestId: D, promptTokens: 3, directives: "" });
    const response = await post(generation.url, "/v1/chat/completions", {
      ...goodBody,
      disaggregated_params: { ...goodParams, encoded_opaque_state: state },
    });
    expect(response.status).toBe(500);
    expect(stringAt(await json(response), "message")).toContain(
      `KV cache transfer failed for ctx_request_id ${D}: the context worker holds no KV for it (404)`,
    );
  });

  for (const [name, params, message] of cases) {
    test(`is refused with 400 when ${name}`, async () => {
      await using generation = startEmulatedWorker({ role: "generation" });
      const response = await post(generation.url, "/v1/chat/completions", { ...goodBody, disaggregated_params: params });
      expect(response.status).toBe(400);
      const body = await json(response);
      expect(at(body, "object")).toBe("error");
      expect(stringAt(body, "message")).toContain(message);
    });
  }

  test("is refused with 400 when chat carries no prompt_token_ids, or completions a text prompt", async () => {
    await using generation = startEmulatedWorker({ role: "generation" });
    const chat = await post(generation.url, "/v1/chat/completions", { ...chatClient, disaggregated_params: goodParams });
    expect(stringAt(await json(chat), "message")).toContain("must carry the context phase's prompt_token_ids");
    const completions = await post(generation.url, "/v1/completions", { prompt: "a b c", disaggregated_params: goodParams });
    expect(completions.status).toBe(400);
    expect(stringAt(await json(completions), "message")).toContain("prompt (as token ids)");
  });

  test("is refused with 400 when the prompt tokens differ from the context phase's", async () => {
    await using generation = startEmulatedWorker({ role: "generation" });
    const response = await post(generation.url, "/v1/chat/completions", { ...goodBody, prompt_token_ids: [1, 2] });
    expect(stringAt(await json(response), "message")).toBe("The prompt has 2 tokens, but its context phase had 3");
  });
});

describe("generation_only, generation first", () => {
  function genFirstParams(contextUrl: string) {
    return {
      request_type: "generation_only",
      ctx_request_id: jsonInteger(D),
      disagg_request_id: jsonInteger(D),
      schedule_style: 1,
      ctx_info_endpoint: contextUrl,
      ctx_dp_rank: 0,
    };
  }
  const client = { messages: [{ role: "user", content: "hi [[emu tokens=3]]" }], stream: true };
  const contextBody = {
    ...client,
    stream: false,
    disaggregated_params: { request_type: "context_only", disagg_request_id: jsonInteger(D), schedule_style: 1 },
  };

  test("waits for the context phase to finish, then streams the answer", async () => {
    await using context = startEmulatedWorker({ role: "context" });
    await using generation = startEmulatedWorker({ role: "generation" });
    let answered = false;
    const pending = post(generation.url, "/v1/chat/completions", { ...client, disaggregated_params: genFirstParams(context.url) });
    void pending.then(() => (answered = true));
    await context.waitFor((r) => r.path === `/emulator/kv/${D}`);
    expect(answered).toBe(false);
    expect((await post(context.url, "/v1/chat/completions", contextBody)).status).toBe(200);
    const response = await pending;
    expect(response.status).toBe(200);
    const deltas = ssePayloads(await response.text()).map((c) => at(c, "choices", 0, "delta", "content"));
    expect(deltas).toEqual(["", " tok1", " tok2", " tok3"]);
    expect(context.requests.find((r) => r.path.startsWith("/emulator/kv/"))?.status).toBe("finished");
  });

  test("answers 500 after kvWaitTimeoutMs when no context phase comes", async () => {
    await using context = startEmulatedWorker({ role: "context" });
    await using generation = startEmulatedWorker({ role: "generation", kvWaitTimeoutMs: 50 });
    const response = await post(generation.url, "/v1/chat/completions", { ...client, disaggregated_params: genFirstParams(context.url) });
    expect(response.status).toBe(500);
    expect(stringAt(await json(response), "message")).toStartWith("KV cache transfer failed");
    expect(generation.running()).toBe(0);
  });

  test("keeps waiting when its context phase fails, as a real engine learns nothing of it", async () => {
    await using context = startEmulatedWorker({ role: "context" });
    await using generation = startEmulatedWorker({ role: "generation", kvWaitTimeoutMs: 300 });
    const pending = post(generation.url, "/v1/chat/completions", { ...client, disaggregated_params: genFirstParams(context.url) });
    await context.waitFor((r) => r.path === `/emulator/kv/${D}`);
    const rejected = { ...contextBody, messages: [{ role: "user", content: "hi [[emu ctx.reject=503]]" }] };
    const rejectedAt = performance.now();
    expect((await post(context.url, "/v1/chat/completions", rejected)).status).toBe(503);
    expect((await pending).status).toBe(500);
    expect(performance.now() - rejectedAt).toBeGreaterThan(150);
  });

  test("aborts its long poll when the proxy aborts the generation request", async () => {
    await using context = startEmulatedWorker({ role: "context" });
    await using generation = startEmulatedWorker({ role: "generation" });
    const controller = new AbortController();
    const body = { ...client, disaggregated_params: genFirstParams(context.url) };
    const pending = post(generation.url, "/v1/chat/completions", body, { signal: controller.signal }).catch(() => undefined);
    await context.waitFor((r) => r.path === `/emulator/kv/${D}`);
    controller.abort();
    await pending;
    await generation.waitFor((r) => r.phase === "generation" && r.status === "aborted");
    await context.waitFor((r) => r.path === `/emulator/kv/${D}` && r.status === "aborted");
    expect(generation.running()).toBe(0);
  });

  test("is refused with 400 when ctx_info_endpoint is still the /server_info list", async () => {
    await using generation = startEmulatedWorker({ role: "generation" });
    const params = { ...genFirstParams("http://ctx"), ctx_info_endpoint: ["http://ctx"] };
    const response = await post(generation.url, "/v1/chat/completions", { ...client, disaggregated_params: params });
    expect(response.status).toBe(400);
    expect(stringAt(await json(response), "message")).toContain("ctx_info_endpoint must be");
  });
});
