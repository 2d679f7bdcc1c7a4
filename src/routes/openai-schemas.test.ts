import { describe, expect, test } from "bun:test";
import type { JsonObject } from "../json/json.ts";
import { chatRequest, check, checkChat, checkCompletions, completionsRequest } from "./openai-schemas.ts";

/** What a check says of a body: "ok", or its refusal's message. */
function verdict(run: () => void): string {
  try {
    run();
    return "ok";
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
}

const models: JsonObject[] = [{}, { model: "m" }, { model: "" }, { model: 5 }, { model: null }];
const streams: JsonObject[] = [{}, { stream: true }, { stream: null }, { stream: "yes" }];

describe("the OpenAI body checks", () => {
  test("a chat body is refused by checkChat exactly when, and with the words, the schema refuses it", () => {
    const messagesCases: JsonObject[] = [{}, { messages: [] }, { messages: [{ role: "user" }] }, { messages: {} }, { messages: "hi" }];
    for (const model of models)
      for (const stream of streams)
        for (const messages of messagesCases) {
          const body = { ...model, ...stream, ...messages, temperature: 0.5 };
          expect(verdict(() => checkChat(body))).toBe(verdict(() => check(chatRequest, body)));
        }
  });

  test("a completions body is refused by checkCompletions exactly when, and with the words, the schema refuses it", () => {
    const prompts: JsonObject[] = [
      {},
      { prompt: "p" },
      { prompt: ["p"] },
      { prompt: ["p", "q"] },
      { prompt: [1, 2] },
      { prompt: [1.5] },
      { prompt: [] },
      { prompt: 5 },
    ];
    for (const model of models)
      for (const stream of streams)
        for (const prompt of prompts) {
          const body = { ...model, ...stream, ...prompt };
          expect(verdict(() => checkCompletions(body))).toBe(verdict(() => check(completionsRequest, body)));
        }
  });
});
