import Anthropic from "@anthropic-ai/sdk";
import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import OpenAI from "openai";
import { binaryCluster, ensureBinary, type Child } from "./binary-harness.ts";

const children: Child[] = [];
let proxyUrl = "";

/** The official SDKs against the compiled proxy, emulated workers with a 3 s prefill. */
describe("official clients through the binary", () => {
  beforeAll(async () => {
    await ensureBinary();
    proxyUrl = await binaryCluster(children, { context: ["--prefill-ms", "3000", "--token-ms", "5"], generation: ["--token-ms", "5"] }, [
      "--stream-start-wait-ms",
      "200",
      "--keepalive-interval-ms",
      "500",
    ]);
  }, 120_000);

  afterAll(() => {
    for (const child of children) child.kill("SIGKILL");
  });

  test("the openai client streams a Responses answer: right text, one response id, gap-free sequence", async () => {
    const client = new OpenAI({ baseURL: `${proxyUrl}/v1`, apiKey: "unused", maxRetries: 0 });
    const started = performance.now();
    const stream = await client.responses.create({ model: "emulated-model", input: "tell me a story", max_output_tokens: 6, stream: true });
    const ids = new Set<string>();
    const sequence: number[] = [];
    let text = "";
    let firstEventAt: number | undefined;
    let completedText = "";
    for await (const event of stream) {
      firstEventAt ??= performance.now() - started;
      sequence.push(event.sequence_number);
      if ("response" in event) ids.add(event.response.id);
      if (event.type === "response.output_text.delta") text += event.delta;
      if (event.type === "response.completed") {
        for (const item of event.response.output) {
          if (item.type !== "message") continue;
          for (const part of item.content) if (part.type === "output_text") completedText += part.text;
        }
      }
    }
    expect(firstEventAt!).toBeLessThan(1000);
    expect(sequence).toEqual(sequence.map((_, i) => i));
    expect(ids.size).toBe(1);
    expect([...ids][0]).toMatch(/^resp_\d+_[0-9a-f]{16}$/);
    expect(text).toBe(" tok1 tok2 tok3 tok4 tok5 tok6");
    expect(completedText).toBe(text);
  }, 20_000);

  test("the anthropic client streams a tool-use turn and a text turn as well-formed messages", async () => {
    // The SDK hides ping events; the time its status line arrived shows the stream opened early.
    let headersAfter: number | undefined;
    const started = performance.now();
    const timedFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const response = await fetch(input, init);
      headersAfter ??= performance.now() - started;
      return response;
    };
    const client = new Anthropic({ baseURL: proxyUrl, apiKey: "unused", maxRetries: 0, fetch: timedFetch });
    const tools: Anthropic.Tool[] = [
      { name: "lookup", description: "looks things up", input_schema: { type: "object", properties: { q: { type: "string" } } } },
    ];
    const turn = client.messages.stream({
      model: "emulated-model",
      max_tokens: 64,
      tools,
      messages: [{ role: "user", content: "[[emu tools=2]] look it up" }],
    });
    const first = await turn.finalMessage();
    expect(first.stop_reason).toBe("tool_use");
    const uses = first.content.filter((block) => block.type === "tool_use");
    expect(uses).toHaveLength(2);
    expect(headersAfter!).toBeLessThan(1000);

    const second = await client.messages
      .stream({
        model: "emulated-model",
        max_tokens: 6,
        tools,
        messages: [
          { role: "user", content: "[[emu tools=2]] look it up" },
          { role: "assistant", content: first.content },
          {
            role: "user",
            content: [
              ...uses.map((use) => ({ type: "tool_result" as const, tool_use_id: use.id, content: "found" })),
              // The later directive wins: this turn answers in text.
              { type: "text" as const, text: "[[emu tools=0]] now answer" },
            ],
          },
        ],
      })
      .finalMessage();
    expect(second.stop_reason).toBe("max_tokens");
    const text = second.content.find((block) => block.type === "text");
    expect(text?.type === "text" && text.text.trim().length > 0).toBe(true);
  }, 30_000);
});
