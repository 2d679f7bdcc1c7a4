import { describe, expect, test } from "bun:test";
import { isJsonObject, type JsonObject } from "../src/json/json.ts";
import { startCluster } from "./support/cluster.ts";

const conversation = [
  { role: "system", content: "be brief" },
  { role: "user", content: "first question" },
  { role: "assistant", content: "first answer" },
  { role: "user", content: "second question" },
];
const chat = (extra: object = {}): object => ({ model: "m", messages: conversation, max_tokens: 3, ...extra });

function bodyOf(record: { body: unknown } | undefined): JsonObject {
  if (!record || !isJsonObject(record.body)) throw new Error("no JSON body");
  return record.body;
}

describe("upstream YAML keys and variables", () => {
  test("chat_template is refused unless allow_request_chat_template is set", async () => {
    await using strict = await startCluster();
    const refused = await strict.post("/v1/chat/completions", chat({ chat_template: "{{ messages }}" }));
    expect(refused.status).toBe(400);
    expect(((await refused.json()) as { message: string }).message).toContain("allow_request_chat_template");
    expect(strict.contexts[0]!.requests.filter((r) => r.method === "POST")).toHaveLength(0);
    await using allowing = await startCluster({ config: { allowRequestChatTemplate: true } });
    expect((await allowing.post("/v1/chat/completions", chat({ chat_template: "{{ messages }}" }))).status).toBe(200);
    expect(bodyOf(allowing.contexts[0]!.requests.find((r) => r.phase === "context"))["chat_template"]).toBe("{{ messages }}");
  });

  test("gen_strip_message_history sends only the last message to the generation worker", async () => {
    await using cluster = await startCluster({ config: { genStripMessageHistory: true } });
    expect((await cluster.post("/v1/chat/completions", chat())).status).toBe(200);
    expect(bodyOf(cluster.contexts[0]!.requests.find((r) => r.phase === "context"))["messages"]).toEqual(conversation);
    expect(bodyOf(cluster.generations[0]!.requests.find((r) => r.phase === "generation"))["messages"]).toEqual([conversation[3]!]);
  });

  test("gen_tokids_ctxbytes asks for prompt_token_ids_b64 and relays it instead of the id list", async () => {
    await using cluster = await startCluster({ config: { genTokidsCtxbytes: true } });
    expect((await cluster.post("/v1/chat/completions", chat())).status).toBe(200);
    const ctxParams = bodyOf(cluster.contexts[0]!.requests.find((r) => r.phase === "context"))["disaggregated_params"];
    expect(isJsonObject(ctxParams) && ctxParams["return_prompt_token_ids_b64"]).toBe(true);
    const gen = bodyOf(cluster.generations[0]!.requests.find((r) => r.phase === "generation"));
    expect(typeof gen["prompt_token_ids_b64"]).toBe("string");
    expect(gen["prompt_token_ids"]).toBeUndefined();
  });

  test("gen_tokids_ctxbytes leaves completions their id-list prompt, and chat keeps its packed ids after a completions request", async () => {
    await using cluster = await startCluster({ config: { genTokidsCtxbytes: true } });
    const completions = await cluster.post("/v1/completions", { model: "m", prompt: "Say hello", max_tokens: 4 });
    expect(completions.status).toBe(200);
    const gens = (): JsonObject[] => cluster.generations[0]!.requests.filter((r) => r.phase === "generation").map(bodyOf);
    expect(Array.isArray(gens()[0]!["prompt"])).toBe(true);
    expect(gens()[0]!["prompt_token_ids_b64"]).toBeUndefined();
    expect((await cluster.post("/v1/chat/completions", chat())).status).toBe(200);
    expect(typeof gens()[1]!["prompt_token_ids_b64"]).toBe("string");
  });

  test("TRTLLM_DISAGG_BENCHMARK_GEN_ONLY sends every request straight to a generation worker with fixed hand-off parameters", async () => {
    await using cluster = await startCluster({ config: { benchmarkGenerationOnly: true } });
    for (const stream of [false, true]) {
      const response = await cluster.post("/v1/chat/completions", chat({ stream }));
      expect(response.status).toBe(200);
      await response.text();
    }
    expect(cluster.contexts[0]!.requests).toHaveLength(0);
    const gens = cluster.generations[0]!.requests.filter((r) => r.phase === "generation").map(bodyOf);
    expect(gens).toHaveLength(2);
    for (const gen of gens) {
      expect(gen["disaggregated_params"]).toEqual({
        request_type: "generation_only",
        first_gen_tokens: [7],
        ctx_request_id: 1,
        encoded_opaque_state: null,
        draft_tokens: null,
      });
      expect(gen["ignore_eos"]).toBe(true);
    }
  });
});
