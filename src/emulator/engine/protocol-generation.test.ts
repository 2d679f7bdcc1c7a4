import { describe, expect, test } from "bun:test";
import { admitFields, generationOf } from "./protocol-generation.ts";

const handOff = { request_type: "generation_only", ctx_request_id: 1, first_gen_tokens: [5] };

describe("the worker generations the emulator plays", () => {
  test("before ctx_usage: the newer fields are a 400 naming them, in FastAPI's words", () => {
    const old = generationOf("1.3.0rc14");
    expect(() => admitFields(old, "chat", { messages: [], disaggregated_params: { ...handOff, ctx_usage: { prompt_tokens: 1 } } })).toThrow(
      "'loc': ('body', 'disaggregated_params', 'ctx_usage'), 'msg': 'Extra inputs are not permitted'",
    );
    expect(() => admitFields(old, "completions", { prompt: "x", conversation_params: { conversation_id: "c" } })).toThrow(
      "'conversation_params'",
    );
    expect(() => admitFields(old, "chat", { messages: [], injected_chat_template_kwargs: ["enable_thinking"] })).toThrow("extra_forbidden");
    const withOld = { messages: [], disaggregated_params: { ...handOff, conversation_id: "c" } };
    expect(admitFields(old, "chat", withOld)).toBe(withOld);
  });

  test("with ctx_usage: ctx_usage taken, conversation_params not yet", () => {
    const mid = generationOf("1.3.0rc18");
    const body = { messages: [], disaggregated_params: { ...handOff, ctx_usage: { prompt_tokens: 1 } } };
    expect(admitFields(mid, "chat", body)).toBe(body);
    expect(() => admitFields(mid, "chat", { messages: [], prompt_token_ids_b64: "AAAA" })).toThrow("'prompt_token_ids_b64'");
  });

  test("newest: the old conversation_id is gone, the newest fields taken", () => {
    const newest = generationOf();
    expect(newest.version).toBe("1.4.0rc0");
    expect(() => admitFields(newest, "chat", { messages: [], disaggregated_params: { ...handOff, conversation_id: "c" } })).toThrow(
      "'conversation_id'",
    );
    const body = {
      messages: [],
      conversation_params: { conversation_id: "c" },
      injected_chat_template_kwargs: ["enable_thinking"],
      disaggregated_params: { ...handOff, ctx_usage: {}, resolved_thinking: true, return_prompt_token_ids_b64: true },
    };
    expect(admitFields(newest, "chat", body)).toBe(body);
    // injected_chat_template_kwargs exists on chat requests only.
    expect(() => admitFields(newest, "completions", { prompt: "x", injected_chat_template_kwargs: [] })).toThrow("extra_forbidden");
  });

  test("1.3.0rc28 and rc29: everything but injected_chat_template_kwargs, which came with rc30 and 1.4.0rc0 (#19351)", () => {
    for (const version of ["1.3.0rc28", "1.3.0rc29"]) {
      const generation = generationOf(version);
      expect(() => admitFields(generation, "chat", { messages: [], injected_chat_template_kwargs: ["enable_thinking"] })).toThrow(
        "'injected_chat_template_kwargs'",
      );
      const body = {
        messages: [],
        conversation_params: { conversation_id: "c" },
        disaggregated_params: { ...handOff, resolved_thinking: true },
      };
      expect(admitFields(generation, "chat", body)).toBe(body);
      expect(generation.responsesDisaggregation).toBe(true);
    }
    const body = { messages: [], injected_chat_template_kwargs: ["enable_thinking"] };
    expect(admitFields(generationOf("1.3.0rc30"), "chat", body)).toBe(body);
  });

  test("Responses (extra=allow): an older worker ignores disaggregated_params and serves it whole", () => {
    const body = { input: "hi", disaggregated_params: { request_type: "context_only" }, anything: 1 };
    expect(admitFields(generationOf("1.3.0rc18"), "responses", body)).toEqual({ input: "hi", anything: 1 });
    expect(admitFields(generationOf(), "responses", body)).toBe(body);
  });
});
