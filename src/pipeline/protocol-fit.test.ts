import { describe, expect, test } from "bun:test";
import { capabilitiesOf, type Capability } from "../workers/protocol.ts";
import { capabilitiesUsed, fitToWorker } from "./protocol-fit.ts";

const newest = {
  model: "m",
  messages: [{ role: "user", content: "hi" }],
  conversation_params: { conversation_id: "c1" },
  injected_chat_template_kwargs: ["enable_thinking"],
  chat_template_kwargs: { enable_thinking: true },
  prompt_token_ids_b64: Buffer.from(new Int32Array([5, 6, 70000]).buffer).toString("base64"),
  disaggregated_params: {
    request_type: "generation_only",
    ctx_request_id: 9,
    ctx_usage: { prompt_tokens: 3, completion_tokens: 1, total_tokens: 4 },
    resolved_thinking: true,
    return_prompt_token_ids_b64: true,
  },
};

describe("bodies cut to a worker's protocol", () => {
  test("a newest worker gets the body itself, not a copy", () => {
    expect(fitToWorker(newest, capabilitiesOf("1.4.0rc0"))).toBe(newest);
  });

  test("a worker before ctx_usage gets none of the newer fields, the token ids unpacked, the conversation inside disaggregated_params", () => {
    const accepts = new Set<Capability>(["disagg_conversation_id"]);
    const fitted = fitToWorker(newest, accepts);
    expect(fitted).toEqual({
      model: "m",
      messages: [{ role: "user", content: "hi" }],
      chat_template_kwargs: { enable_thinking: true },
      prompt_token_ids: [5, 6, 70000],
      disaggregated_params: { request_type: "generation_only", ctx_request_id: 9, conversation_id: "c1" },
    });
    expect(newest.disaggregated_params.ctx_usage).toBeDefined();
    expect(capabilitiesUsed(fitted)).toEqual(new Set(["disagg_conversation_id"]));
  });

  test("a worker with ctx_usage keeps it", () => {
    const fitted = fitToWorker(newest, capabilitiesOf("1.3.0rc18"));
    expect(fitted["disaggregated_params"]).toMatchObject({ ctx_usage: { prompt_tokens: 3 }, conversation_id: "c1" });
    expect(fitted["conversation_params"]).toBeUndefined();
  });

  test("a body without optional fields is left alone whatever the worker", () => {
    const plain = { model: "m", prompt: "x", disaggregated_params: { request_type: "context_only" } };
    expect(fitToWorker(plain, new Set())).toBe(plain);
  });
});
