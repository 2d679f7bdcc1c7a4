import { describe, expect, test } from "bun:test";
import { isJsonObject, parseJson, readInteger, type JsonObject } from "../src/json/json.ts";
import { sseData, startCluster } from "./support/cluster.ts";

const SCHEDULES = ["context_first", "generation_first"] as const;
const chat = (extra: JsonObject = {}): JsonObject => ({
  model: "emulated-model",
  messages: [{ role: "user", content: "hello there proxy" }],
  max_tokens: 8,
  ...extra,
});
const completion = (extra: JsonObject = {}): JsonObject => ({
  model: "emulated-model",
  prompt: "hello there proxy",
  max_tokens: 8,
  ...extra,
});

function params(body: unknown): JsonObject {
  const p = isJsonObject(body) ? body["disaggregated_params"] : undefined;
  if (!isJsonObject(p)) throw new Error("no disaggregated_params");
  return p;
}

describe.each(SCHEDULES)("%s", (schedule) => {
  test("a non-streamed chat request goes through both workers under one id", async () => {
    await using cluster = await startCluster({ config: { schedule } });
    const response = await cluster.post("/v1/chat/completions", chat({ unknown_field: { kept: true } }));
    expect(response.status).toBe(200);
    const body = parseJson(await response.text());
    expect(isJsonObject(body) && body["object"]).toBe("chat.completion");
    const ctx = cluster.contexts[0]!.requests.find((r) => r.phase === "context")!;
    const gen = cluster.generations[0]!.requests.find((r) => r.phase === "generation")!;
    expect(params(ctx.body)["request_type"]).toBe("context_only");
    expect(isJsonObject(ctx.body) && ctx.body["stream"]).toBe(false);
    expect(isJsonObject(ctx.body) && ctx.body["stream_options"]).toBeNull();
    expect(isJsonObject(ctx.body) && ctx.body["unknown_field"]).toEqual({ kept: true });
    expect(params(gen.body)["request_type"]).toBe("generation_only");
    expect(ctx.disaggRequestId).toBeDefined();
    expect(gen.disaggRequestId).toBe(ctx.disaggRequestId);
    expect(ctx.disaggRequestId! >= 1n << 40n).toBe(true);
    expect(response.headers.get("x-trtllm-engine-request-id")).toBe(ctx.disaggRequestId!.toString());
  });

  test("a streamed chat request relays the generation worker's chunks and [DONE]", async () => {
    await using cluster = await startCluster({ config: { schedule } });
    const response = await cluster.post("/v1/chat/completions", chat({ stream: true }));
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toContain("text/event-stream");
    const data = await sseData(response);
    expect(data.at(-1)).toBe("[DONE]");
    const text = data.slice(0, -1).map((d) => JSON.parse(d) as { choices: { delta: { content?: string } }[] });
    expect(
      text
        .map((c) => c.choices[0]?.delta.content ?? "")
        .join("")
        .trim().length,
    ).toBeGreaterThan(0);
    const gen = cluster.generations[0]!.requests.find((r) => r.phase === "generation")!;
    expect(isJsonObject(gen.body) && gen.body["stream"]).toBe(true);
  });

  test("a completions request is disaggregated, streamed and not", async () => {
    await using cluster = await startCluster({ config: { schedule } });
    const plain = await cluster.post("/v1/completions", completion());
    expect(plain.status).toBe(200);
    const streamed = await cluster.post("/v1/completions", completion({ stream: true }));
    expect((await sseData(streamed)).at(-1)).toBe("[DONE]");
    const gens = cluster.generations[0]!.requests.filter((r) => r.phase === "generation");
    expect(gens).toHaveLength(2);
  });
});

describe("context_first hand-off", () => {
  test("the generation worker gets the context's parameters verbatim and the prompt as token ids", async () => {
    await using cluster = await startCluster();
    await (await cluster.post("/v1/completions", completion())).text();
    await (await cluster.post("/v1/chat/completions", chat())).text();
    const [ctxCompletion, ctxChat] = cluster.contexts[0]!.requests.filter((r) => r.phase === "context");
    const [genCompletion, genChat] = cluster.generations[0]!.requests.filter((r) => r.phase === "generation");
    for (const [ctx, gen] of [
      [ctxCompletion, genCompletion],
      [ctxChat, genChat],
    ] as const) {
      const sent = params(gen!.body);
      expect(typeof sent["encoded_opaque_state"]).toBe("string");
      expect(Array.isArray(sent["first_gen_tokens"])).toBe(true);
      expect(readInteger(sent["disagg_request_id"])).toBe(ctx!.disaggRequestId);
    }
    expect(Array.isArray(isJsonObject(genCompletion!.body) && genCompletion!.body["prompt"])).toBe(true);
    expect(Array.isArray(isJsonObject(genChat!.body) && genChat!.body["prompt_token_ids"])).toBe(true);
  });

  test("a request the context phase finished is answered by the context worker alone", async () => {
    await using cluster = await startCluster();
    const response = await cluster.post("/v1/chat/completions", chat({ max_tokens: 1 }));
    const body = (await response.json()) as { choices: { message: { content: string }; disaggregated_params?: unknown }[] };
    expect(body.choices[0]!.message.content.length).toBeGreaterThan(0);
    expect(body.choices[0]!.disaggregated_params).toBeUndefined();
    expect(cluster.generations[0]!.requests.filter((r) => r.phase === "generation")).toHaveLength(0);
  });

  test("a streaming client of an early-finished request gets the content as chunks, then [DONE]", async () => {
    await using cluster = await startCluster();
    const response = await cluster.post(
      "/v1/chat/completions",
      chat({ max_tokens: 1, stream: true, stream_options: { include_usage: true } }),
    );
    const data = await sseData(response);
    expect(data.at(-1)).toBe("[DONE]");
    const chunks = data
      .slice(0, -1)
      .map((d) => JSON.parse(d) as { choices: { delta?: { content?: string }; finish_reason?: string | null }[]; usage?: unknown });
    expect(chunks.some((c) => (c.choices[0]?.delta?.content ?? "").length > 0)).toBe(true);
    expect(chunks.some((c) => c.choices[0]?.finish_reason === "stop" || c.choices[0]?.finish_reason === "length")).toBe(true);
    expect(chunks.at(-1)?.usage).toBeDefined();
  });
});
