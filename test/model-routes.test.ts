/**
 * The model routes as the official SDKs call them: the `openai` SDK's models.retrieve asks
 * GET /v1/models/{id}; the `@anthropic-ai/sdk` asks GET /v1/models (and /v1/models/{id}) with
 * `anthropic-version`, and reads Anthropic's shape (real-clients.md).
 */

import Anthropic, { NotFoundError as AnthropicNotFound } from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI, { NotFoundError as OpenAiNotFound } from "openai";
import { startCluster, type TestCluster } from "./support/cluster.ts";
import { failureOf } from "./support/rejection.ts";

let cluster: TestCluster;
let slashed: TestCluster;

beforeAll(async () => {
  cluster = await startCluster();
  // Model names hold slashes (a Hugging Face repo id).
  slashed = await startCluster({ contexts: [{ model: "meta-llama/Llama-3.1-8B" }], generations: [{ model: "meta-llama/Llama-3.1-8B" }] });
});

afterAll(async () => {
  await cluster[Symbol.asyncDispose]();
  await slashed[Symbol.asyncDispose]();
});

const openai = (url: string): OpenAI => new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
const anthropic = (): Anthropic => new Anthropic({ baseURL: cluster.url, apiKey: "unused", maxRetries: 0 });

describe("GET /v1/models/{id} through the openai SDK", () => {
  test("models.retrieve answers the served model's OpenAI object", async () => {
    const model = await openai(cluster.url).models.retrieve("emulated-model");
    expect(model).toMatchObject({ id: "emulated-model", object: "model", owned_by: "tensorrt_llm" });
    expect(typeof model.created).toBe("number");
  });

  test("an id with a slash is one id", async () => {
    expect((await openai(slashed.url).models.retrieve("meta-llama/Llama-3.1-8B")).id).toBe("meta-llama/Llama-3.1-8B");
    expect((await fetch(`${slashed.url}/v1/models/meta-llama%2FLlama-3.1-8B`)).status).toBe(200);
  });

  test("an unknown id is OpenAI's 404 naming it, coded model_not_found", async () => {
    const error = await failureOf(() => openai(cluster.url).models.retrieve("gpt-9"));
    expect(error).toBeInstanceOf(OpenAiNotFound);
    expect(error["message"]).toBe("404 The model 'gpt-9' does not exist");
    expect(error["code"]).toBe("model_not_found");
    expect(error["param"]).toBe("model");
  });

  test("the list keeps OpenAI's shape without anthropic-version", async () => {
    const page = await openai(cluster.url).models.list();
    expect(page.data.map((entry) => [entry.id, entry.object])).toEqual([["emulated-model", "model"]]);
  });
});

describe("the model routes through the anthropic SDK", () => {
  test("models.list reads Anthropic's page: type model, display_name, created_at, has_more, first_id, last_id", async () => {
    const page = await anthropic().models.list();
    expect(page.data).toHaveLength(1);
    const [entry] = page.data;
    expect(entry).toMatchObject({ type: "model", id: "emulated-model", display_name: "emulated-model" });
    expect(Number.isNaN(Date.parse(entry!.created_at))).toBe(false);
    expect(page.has_more).toBe(false);
    const raw = (await (await fetch(`${cluster.url}/v1/models`, { headers: { "anthropic-version": "2023-06-01" } })).json()) as Record<
      string,
      unknown
    >;
    expect(raw).toMatchObject({ has_more: false, first_id: "emulated-model", last_id: "emulated-model" });
  });

  test("models.retrieve reads one; an unknown id is Anthropic's not_found_error", async () => {
    expect(await anthropic().models.retrieve("emulated-model")).toMatchObject({ type: "model", id: "emulated-model" });
    const error = await failureOf(() => anthropic().models.retrieve("claude-opus-5-5"));
    expect(error).toBeInstanceOf(AnthropicNotFound);
    expect((error["error"] as { error: { type: string; message: string } }).error).toEqual({
      type: "not_found_error",
      message: "The model 'claude-opus-5-5' does not exist",
    });
  });

  test("messages.countTokens is counted by a context worker", async () => {
    const counted = await anthropic().messages.countTokens({
      model: "emulated-model",
      messages: [{ role: "user", content: "one two three" }],
    });
    expect(counted.input_tokens).toBeGreaterThan(0);
    expect(cluster.contexts[0]!.requests.some((r) => r.path === "/v1/messages/count_tokens")).toBe(true);
  });
});

describe("one-shot calls take the context workers in turn", () => {
  test("GET /v1/models and count_tokens spread over the context workers, as upstream's count_tokens takes them in turn", async () => {
    await using two = await startCluster({ contexts: [{}, {}] });
    const count = (path: string): number[] => two.contexts.map((worker) => worker.requests.filter((r) => r.path === path).length);
    const listsBefore = count("/v1/models");
    for (let i = 0; i < 4; i++) expect((await fetch(`${two.url}/v1/models`)).status).toBe(200);
    expect(count("/v1/models").map((n, i) => n - listsBefore[i]!)).toEqual([2, 2]);
    for (let i = 0; i < 4; i++) {
      const counted = await two.post("/v1/messages/count_tokens", { model: "emulated-model", messages: [{ role: "user", content: "hi" }] });
      expect(counted.status).toBe(200);
    }
    expect(count("/v1/messages/count_tokens")).toEqual([2, 2]);
  });
});
