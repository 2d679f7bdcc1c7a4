import Anthropic, { APIError as AnthropicApiError, BadRequestError as AnthropicBadRequest } from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI, { BadRequestError as OpenAiBadRequest } from "openai";
import { contextLengthExceeded, errorResponse } from "../src/emulator/http/worker-error.ts";
import { eventually, startCluster, type TestCluster } from "./support/cluster.ts";
import { fakeWorker } from "./support/fake-worker.ts";
import { parseSseEvents, type ParsedEvent } from "./support/sse.ts";

/**
 * A prompt too long for the context reaches each client in its own words (#25 item 2): the
 * context worker refuses it as trtllm-serve does since #19457 (400, context_length_exceeded),
 * early (within the stream-start wait) or late (after the stream opened).
 */

const MAX = 8;
const LONG = "one two three four five six seven eight nine ten eleven twelve";
const PROMPT_TOO_LONG = /^prompt is too long: (\d+) tokens > (\d+) maximum$/;

function dataOf(event: ParsedEvent): Record<string, unknown> {
  return event.data;
}

/** A context worker of the newest release that answers every model request with `refuse`. */
function refusingContext(refuse: () => Response | Promise<Response>): ReturnType<typeof fakeWorker> {
  return fakeWorker((request) => (new URL(request.url).pathname === "/version" ? Response.json({ version: "1.3.0rc28" }) : refuse()));
}

function failedError(event: ParsedEvent): { code: string; message: string } {
  const response = dataOf(event)["response"] as { error: { code: string; message: string } };
  return response.error;
}

describe("a prompt refused within the stream-start wait", () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster({ contexts: [{ maxSeqLen: MAX }] });
  });
  afterAll(() => cluster[Symbol.asyncDispose]());

  test("a streamed Responses request gets 200 and created, in_progress, failed coded context_length_exceeded", async () => {
    const response = await cluster.post("/v1/responses", { model: "emulated-model", input: LONG, stream: true });
    expect(response.status).toBe(200);
    const events = parseSseEvents(await response.text());
    expect(events.map((event) => event.event)).toEqual(["response.created", "response.in_progress", "response.failed"]);
    expect(events.map((event) => dataOf(event)["sequence_number"])).toEqual([0, 1, 2]);
    const error = failedError(events[2]!);
    expect(error.code).toBe("context_length_exceeded");
    expect(error.message).toContain(`maximum context length is ${MAX} tokens`);
    const ids = events.map((event) => (dataOf(event)["response"] as { id: string }).id);
    expect(new Set(ids).size).toBe(1);
  });

  test("the openai client sees the streamed Responses failure as response.failed with its code", async () => {
    const client = new OpenAI({ baseURL: `${cluster.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const stream = await client.responses.create({ model: "emulated-model", input: LONG, stream: true });
    const types: string[] = [];
    let code: string | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === "response.failed") code = event.response.error?.code;
    }
    expect(types).toEqual(["response.created", "response.in_progress", "response.failed"]);
    expect(code).toBe("context_length_exceeded");
  });

  test("a non-streamed Responses request keeps the worker's 400 and its code", async () => {
    const response = await cluster.post("/v1/responses", { model: "emulated-model", input: LONG });
    expect(response.status).toBe(400);
    const body = (await response.json()) as Record<string, unknown>;
    expect(body["code"]).toBe("context_length_exceeded");
    expect(body["message"]).toContain(`maximum context length is ${MAX} tokens`);
    // The openai client reads an `error` member, which trtllm-serve's flat envelope has not: it
    // sees a BadRequestError without a code, as it does from upstream's proxy.
    const client = new OpenAI({ baseURL: `${cluster.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const refused = await client.responses.create({ model: "emulated-model", input: LONG }).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAiBadRequest);
    expect((refused as OpenAiBadRequest).status).toBe(400);
  });

  test("chat completions get the worker's envelope as it came, streamed or not", async () => {
    for (const stream of [false, true]) {
      const response = await cluster.post("/v1/chat/completions", {
        model: "emulated-model",
        messages: [{ role: "user", content: LONG }],
        stream,
      });
      expect(response.status).toBe(400);
      const body = (await response.json()) as Record<string, unknown>;
      expect(body["object"]).toBe("error");
      expect(body["code"]).toBe("context_length_exceeded");
      expect(body["message"]).toContain(`maximum context length is ${MAX} tokens`);
    }
    const client = new OpenAI({ baseURL: `${cluster.url}/v1`, apiKey: "unused", maxRetries: 0 });
    const refused = await client.chat.completions
      .create({ model: "emulated-model", messages: [{ role: "user", content: LONG }], stream: true })
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(OpenAiBadRequest);
    expect((refused as OpenAiBadRequest).status).toBe(400);
  });

  test("/v1/messages answers invalid_request_error 'prompt is too long: N tokens > M maximum', streamed or not", async () => {
    for (const stream of [false, true]) {
      const response = await cluster.post("/v1/messages", {
        model: "emulated-model",
        max_tokens: 16,
        messages: [{ role: "user", content: LONG }],
        stream,
      });
      expect(response.status).toBe(400);
      const body = (await response.json()) as { type: string; error: { type: string; message: string } };
      expect(body.type).toBe("error");
      expect(body.error.type).toBe("invalid_request_error");
      const [, prompt, max] = PROMPT_TOO_LONG.exec(body.error.message) ?? [];
      expect(Number(max)).toBe(MAX);
      expect(Number(prompt)).toBeGreaterThan(MAX);
    }
  });

  test("the anthropic client gets a BadRequestError whose message is the one Claude Code compacts on", async () => {
    const client = new Anthropic({ baseURL: cluster.url, apiKey: "unused", maxRetries: 0 });
    const messages: Anthropic.MessageParam[] = [{ role: "user", content: LONG }];
    const plain = await client.messages.create({ model: "emulated-model", max_tokens: 16, messages }).catch((error: unknown) => error);
    const streamed = await client.messages
      .stream({ model: "emulated-model", max_tokens: 16, messages })
      .finalMessage()
      .catch((error: unknown) => error);
    for (const refused of [plain, streamed]) {
      expect(refused).toBeInstanceOf(AnthropicBadRequest);
      const error = refused as AnthropicBadRequest;
      expect(error.status).toBe(400);
      expect(error.message).toMatch(/prompt is too long: \d+ tokens > 8 maximum/);
    }
  });
});

describe("a prompt refused under generation_first", () => {
  let cluster: TestCluster;
  beforeAll(async () => {
    cluster = await startCluster({ contexts: [{ maxSeqLen: MAX }], config: { schedule: "generation_first" } });
  });
  afterAll(() => cluster[Symbol.asyncDispose]());

  test("the context leg's refusal still reaches each client in its words, the generation leg cancelled", async () => {
    const responses = await cluster.post("/v1/responses", { model: "emulated-model", input: LONG, stream: true });
    expect(responses.status).toBe(200);
    const events = parseSseEvents(await responses.text());
    expect(events.map((event) => event.event)).toEqual(["response.created", "response.in_progress", "response.failed"]);
    expect(failedError(events[2]!).code).toBe("context_length_exceeded");
    const messages = await cluster.post("/v1/messages", {
      model: "emulated-model",
      max_tokens: 16,
      messages: [{ role: "user", content: LONG }],
    });
    expect(messages.status).toBe(400);
    expect(((await messages.json()) as { error: { message: string } }).error.message).toMatch(PROMPT_TOO_LONG);
    const completions = await cluster.post("/v1/completions", { model: "emulated-model", prompt: LONG });
    expect(completions.status).toBe(400);
    expect(((await completions.json()) as Record<string, unknown>)["code"]).toBe("context_length_exceeded");
    await eventually(() => cluster.generations[0]!.running() === 0, 2000, "the generation legs' end");
  });
});

describe("a prompt refused after the stream opened", () => {
  const REFUSE_AFTER_MS = 300;
  let cluster: TestCluster;
  let context: ReturnType<typeof fakeWorker>;
  beforeAll(async () => {
    // The refusal comes after the start wait (a context worker slow to tokenize a long prompt).
    context = refusingContext(async () => {
      await Bun.sleep(REFUSE_AFTER_MS);
      return errorResponse(contextLengthExceeded(MAX, 12));
    });
    cluster = await startCluster({ config: { contextServers: [`http://127.0.0.1:${context.port}`], streamStartWaitMs: 20 } });
  });
  afterAll(async () => {
    await cluster[Symbol.asyncDispose]();
    await context.stop(true);
  });

  test("a streamed Responses request ends in response.failed coded context_length_exceeded, its sequence gap-free", async () => {
    const response = await cluster.post("/v1/responses", { model: "emulated-model", input: LONG, stream: true });
    expect(response.status).toBe(200);
    const events = parseSseEvents(await response.text());
    const named = events.filter((event) => event.event !== undefined);
    expect(named[0]!.event).toBe("response.created");
    expect(named.at(-1)!.event).toBe("response.failed");
    expect(named.some((event) => event.event === "error")).toBe(false);
    const sequence = named.map((event) => dataOf(event)["sequence_number"]);
    expect(sequence).toEqual(sequence.map((_, i) => i));
    expect(failedError(named.at(-1)!)).toEqual({
      code: "context_length_exceeded",
      message: expect.stringContaining("maximum context length is 8 tokens"),
    });
  });

  test("a streamed /v1/messages request ends in an invalid_request_error event with Anthropic's wording", async () => {
    const response = await cluster.post("/v1/messages", {
      model: "emulated-model",
      max_tokens: 16,
      messages: [{ role: "user", content: LONG }],
      stream: true,
    });
    expect(response.status).toBe(200);
    const events = parseSseEvents(await response.text());
    // The opening is a ping (message_start waits for the first chunk); the refusal ends it.
    expect(events.map((event) => event.event)).toEqual(["ping", "error"]);
    const last = events.at(-1)!;
    expect(last.event).toBe("error");
    expect(dataOf(last)["error"]).toEqual({ type: "invalid_request_error", message: "prompt is too long: 12 tokens > 8 maximum" });
    const client = new Anthropic({ baseURL: cluster.url, apiKey: "unused", maxRetries: 0 });
    const refused = await client.messages
      .stream({ model: "emulated-model", max_tokens: 16, messages: [{ role: "user", content: LONG }] })
      .finalMessage()
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(AnthropicApiError);
    expect((refused as Error).message).toContain("prompt is too long: 12 tokens > 8 maximum");
  });

  test("a streamed chat request ends in an in-band error keeping the code context_length_exceeded", async () => {
    const response = await cluster.post("/v1/chat/completions", {
      model: "emulated-model",
      messages: [{ role: "user", content: LONG }],
      stream: true,
    });
    expect(response.status).toBe(200);
    const events = parseSseEvents(await response.text());
    const error = dataOf(events.at(-1)!)["error"] as Record<string, unknown>;
    expect(error["code"]).toBe("context_length_exceeded");
    expect(error["message"]).toContain("maximum context length is 8 tokens");
  });
});

describe("older worker wordings of a context overflow", () => {
  const PYTORCH = "The sum of prompt length (72417.0), query length (0) should not exceed max_num_tokens (69632)";
  let cluster: TestCluster;
  let context: ReturnType<typeof fakeWorker>;
  beforeAll(async () => {
    context = refusingContext(() =>
      Response.json({ object: "error", message: PYTORCH, type: "BadRequestError", param: null, code: 400 }, { status: 400 }),
    );
    cluster = await startCluster({ config: { contextServers: [`http://127.0.0.1:${context.port}`] } });
  });
  afterAll(async () => {
    await cluster[Symbol.asyncDispose]();
    await context.stop(true);
  });

  test("a PyTorch-backend max_num_tokens refusal reaches Anthropic clients with its counts", async () => {
    const response = await cluster.post("/v1/messages", {
      model: "emulated-model",
      max_tokens: 16,
      messages: [{ role: "user", content: LONG }],
    });
    expect(response.status).toBe(400);
    expect(await response.json()).toEqual({
      type: "error",
      error: { type: "invalid_request_error", message: "prompt is too long: 72417 tokens > 69632 maximum" },
    });
  });

  test("and a streamed Responses client as response.failed coded context_length_exceeded, the worker's text kept", async () => {
    const response = await cluster.post("/v1/responses", { model: "emulated-model", input: LONG, stream: true });
    expect(response.status).toBe(200);
    const events = parseSseEvents(await response.text());
    expect(events.map((event) => event.event)).toEqual(["response.created", "response.in_progress", "response.failed"]);
    expect(failedError(events[2]!)).toEqual({ code: "context_length_exceeded", message: PYTORCH });
  });

  test("while chat clients get the worker's envelope, OpenAI's error object beside its fields", async () => {
    const response = await cluster.post("/v1/chat/completions", { model: "emulated-model", messages: [{ role: "user", content: LONG }] });
    expect(response.status).toBe(400);
    const fields = { message: PYTORCH, type: "BadRequestError", param: null, code: 400 };
    expect(await response.json()).toEqual({ object: "error", ...fields, error: fields });
  });
});
