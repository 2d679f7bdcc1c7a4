/**
 * What the official SDKs show of a failure the proxy passes on (real-clients.md: the `openai`
 * SDK read trtllm-serve's flat `{"object":"error","message":…}` as "400 status code (no body)").
 * The clients run in this process against the proxy in front of emulated workers.
 */

import Anthropic, { BadRequestError as AnthropicBadRequest } from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI, { BadRequestError as OpenAiBadRequest } from "openai";
import { startCluster, type TestCluster } from "./support/cluster.ts";
import { failureOf } from "./support/rejection.ts";

let cluster: TestCluster;

beforeAll(async () => {
  cluster = await startCluster({ config: { maxRetries: 0 } });
});

afterAll(async () => {
  await cluster[Symbol.asyncDispose]();
});

function openai(): OpenAI {
  return new OpenAI({ baseURL: `${cluster.url}/v1`, apiKey: "unused", maxRetries: 0 });
}

describe("a worker's error through the openai SDK", () => {
  test("a context worker's 400 shows its message, type and code, not '(no body)'", async () => {
    const error = await failureOf(() =>
      openai().chat.completions.create({
        model: "emulated-model",
        messages: [{ role: "user", content: "hi [[emu ctx.reject=400]]" }],
        max_tokens: 2,
      }),
    );
    expect(error).toBeInstanceOf(OpenAiBadRequest);
    expect(error["status"]).toBe(400);
    expect(error["message"]).toBe("400 Emulated rejection with status 400");
    expect(error["type"]).toBe("BadRequestError");
    expect(error["code"]).toBe(400);
  });

  test("a streamed request's 400 before its stream opens reads the same", async () => {
    const error = await failureOf(() =>
      openai().chat.completions.create({
        model: "emulated-model",
        messages: [{ role: "user", content: "hi [[emu ctx.reject=400]]" }],
        stream: true,
      }),
    );
    expect(error["status"]).toBe(400);
    expect(error["message"]).toBe("400 Emulated rejection with status 400");
  });

  test("a Responses request's 400 reads the same", async () => {
    const error = await failureOf(() => openai().responses.create({ model: "emulated-model", input: "hi [[emu ctx.reject=400]]" }));
    expect(error["status"]).toBe(400);
    expect(error["message"]).toBe("400 Emulated rejection with status 400");
  });

  test("the body keeps trtllm-serve's flat fields for upstream tooling, OpenAI's error object beside them", async () => {
    const response = await cluster.post("/v1/completions", { model: "emulated-model", prompt: "hi [[emu ctx.reject=400]]", max_tokens: 2 });
    expect(response.status).toBe(400);
    const fields = { message: "Emulated rejection with status 400", type: "BadRequestError", param: null, code: 400 };
    expect(await response.json()).toEqual({ object: "error", ...fields, error: fields });
  });

  test("the proxy's own refusal reads as well", async () => {
    const error = await failureOf(() => openai().chat.completions.create({ model: "emulated-model", messages: "not a list" as never }));
    expect(error["status"]).toBe(400);
    expect(String(error["message"])).not.toContain("no body");
  });
});

describe("a worker's error through the anthropic SDK", () => {
  test("a context worker's 400 shows its message as an invalid_request_error", async () => {
    const client = new Anthropic({ baseURL: cluster.url, apiKey: "unused", maxRetries: 0 });
    const error = await failureOf(() =>
      client.messages.create({
        model: "emulated-model",
        max_tokens: 2,
        messages: [{ role: "user", content: "hi [[emu ctx.reject=400]]" }],
      }),
    );
    expect(error).toBeInstanceOf(AnthropicBadRequest);
    expect(error["status"]).toBe(400);
    expect(String(error["message"])).toContain("Emulated rejection with status 400");
    expect((error["error"] as { error: { type: string } }).error.type).toBe("invalid_request_error");
  });
});
