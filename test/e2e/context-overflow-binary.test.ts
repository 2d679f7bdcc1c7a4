import Anthropic, { BadRequestError as AnthropicBadRequest } from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { binaryCluster, ensureBinary, type Child } from "./binary-harness.ts";

const children: Child[] = [];
let proxyUrl = "";
const LONG = "one two three four five six seven eight nine ten eleven twelve";

/** The compiled binary end to end: `worker --max-seq-len` refuses, the proxy tells each client. */
describe("context overflow through the binary", () => {
  beforeAll(async () => {
    await ensureBinary();
    proxyUrl = await binaryCluster(children, { context: ["--max-seq-len", "8"], generation: [] }, []);
  }, 120_000);

  afterAll(() => {
    for (const child of children) child.kill("SIGKILL");
  });

  test("the openai client's Responses stream ends in response.failed coded context_length_exceeded", async () => {
    const client = new OpenAI({ baseURL: `${proxyUrl}/v1`, apiKey: "unused", maxRetries: 0 });
    const stream = await client.responses.create({ model: "emulated-model", input: LONG, stream: true });
    const types: string[] = [];
    let error: { code: string; message: string } | null | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.failed") error = event.response.error;
    }
    expect(types).toEqual(["response.created", "response.in_progress", "response.failed"]);
    expect(error?.code).toBe("context_length_exceeded");
    expect(error?.message).toContain("maximum context length is 8 tokens");
  }, 20_000);

  test("the anthropic client gets invalid_request_error 'prompt is too long: N tokens > 8 maximum'", async () => {
    const client = new Anthropic({ baseURL: proxyUrl, apiKey: "unused", maxRetries: 0 });
    const refused = await client.messages
      .stream({ model: "emulated-model", max_tokens: 16, messages: [{ role: "user", content: LONG }] })
      .finalMessage()
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AnthropicBadRequest);
    expect((refused as AnthropicBadRequest).message).toMatch(/prompt is too long: \d+ tokens > 8 maximum/);
  }, 20_000);
});
