/**
 * What real clients expect of the compiled binary (issue #35): an overloaded fleet's status on a
 * streamed request, a worker's error and the model routes through the official SDKs, and a Codex
 * sub-agent placed with its parent.
 */

import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { codexSubagentTurn, codexTurn, type CodexRequest } from "../fixtures/codex/codex-0.169.ts";
import { binaryCluster, ensureBinary, spawnBinary, spawnBinaryWithLog, type Child } from "./binary-harness.ts";

const children: Child[] = [];

beforeAll(ensureBinary, 120_000);

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
});

const post = (url: string, path: string, body: object, headers: Record<string, string> = { "content-type": "application/json" }) =>
  fetch(`${url}${path}`, { method: "POST", headers, body: JSON.stringify(body) });

describe("the compiled binary and real clients", () => {
  test("a streamed request to a fleet whose context worker is overloaded gets 503 (529 on /v1/messages) with Retry-After, no 200", async () => {
    const url = await binaryCluster(children, { context: ["--reject-status", "503"], generation: [] }, []);
    const chat = await post(url, "/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "hi" }], stream: true });
    expect(chat.status).toBe(503);
    expect(chat.headers.get("retry-after")).not.toBeNull();
    await chat.text();
    const messages = await post(url, "/v1/messages", {
      model: "m",
      max_tokens: 3,
      stream: true,
      messages: [{ role: "user", content: "hi" }],
    });
    expect(messages.status).toBe(529);
    expect(messages.headers.get("retry-after")).not.toBeNull();
    expect(((await messages.json()) as { error: { type: string } }).error.type).toBe("overloaded_error");
  }, 30_000);

  test("the openai SDK shows a worker's 400 message and retrieves models; the anthropic SDK lists them in its shape", async () => {
    const url = await binaryCluster(children, { context: [], generation: [] }, []);
    const openai = new OpenAI({ baseURL: `${url}/v1`, apiKey: "unused", maxRetries: 0 });
    const refused = await openai.chat.completions
      .create({ model: "emulated-model", messages: [{ role: "user", content: "hi [[emu ctx.reject=400]]" }] })
      .then(
        () => undefined,
        (error: unknown) => error as { status: number; message: string },
      );
    expect(refused).toMatchObject({ status: 400, message: "400 Emulated rejection with status 400" });
    expect((await openai.models.retrieve("emulated-model")).id).toBe("emulated-model");
    const unknown = await openai.models.retrieve("gpt-9").then(
      () => undefined,
      (error: unknown) => error as { status: number; code: string },
    );
    expect(unknown).toMatchObject({ status: 404, code: "model_not_found" });
    const page = await new Anthropic({ baseURL: url, apiKey: "unused", maxRetries: 0 }).models.list();
    expect(page.data[0]).toMatchObject({ type: "model", id: "emulated-model", display_name: "emulated-model" });
  }, 30_000);

  test("a Codex sub-agent (headers and body after Codex 0.169) lands on its parent's context worker", async () => {
    const contexts = [
      await spawnBinary(["worker", "--role", "context", "--port", "0"], children),
      await spawnBinary(["worker", "--role", "context", "--port", "0"], children),
    ];
    const generation = await spawnBinary(["worker", "--role", "generation", "--port", "0"], children);
    const args = ["serve", "--port", "0", "--host", "127.0.0.1", "--context-router", "conversation"];
    for (const context of contexts) args.push("--context", context.url);
    const proxy = await spawnBinaryWithLog([...args, "--generation", generation.url], children);
    for (let i = 0; i < 400 && (await fetch(`${proxy.url}/health`)).status !== 200; i++) await Bun.sleep(10);
    const workerOf = async (request: CodexRequest): Promise<string> => {
      const response = await post(proxy.url, "/v1/responses", request.body, request.headers);
      expect(response.status).toBe(200);
      await response.text();
      const lines = await proxy.log.until((line) => line.includes('"msg":"request"'));
      return String((JSON.parse(lines.at(-1)!) as Record<string, unknown>)["context_worker"]);
    };
    const parents = [await workerOf(codexTurn("session-a", "refactor")), await workerOf(codexTurn("session-b", "document"))];
    expect(new Set(parents).size).toBe(2);
    expect(await workerOf(codexSubagentTurn("session-a", "thread-a1", "explore"))).toBe(parents[0]!);
    expect(await workerOf(codexSubagentTurn("session-b", "thread-b1", "explore"))).toBe(parents[1]!);
    void proxy.log.until(() => false);
  }, 30_000);
});
