import { describe, expect, test } from "bun:test";
import { startEmulatedWorker } from "../../src/emulator/index.ts";
import { messagesText } from "../../src/emulator/engine/prompt-text.ts";
import { tokenize } from "../../src/emulator/engine/tokenizer.ts";
import { HttpConnection } from "../http/connection.ts";
import { postRequest } from "../http/exchange.ts";
import { endpointOf } from "./paths.ts";
import { chatTurn } from "./chat-turn.ts";
import { promptTokensOfTurn, systemPrompt, turnBody, userMessage, words, type ChatMessage } from "./conversation-script.ts";

const SHAPE = { systemTokens: 8, userTokens: 12, replyTokens: 4 };

describe("conversation script", () => {
  test("words are three letters, the same for the same seed, different for another", () => {
    expect(words(7, 50)).toMatch(/^[a-z]{3}( [a-z]{3}){49}$/);
    expect(words(7, 50)).toBe(words(7, 50));
    expect(words(8, 50)).not.toBe(words(7, 50));
  });

  test("each turn's prompt starts with the previous one and counts the tokens the emulated worker counts", () => {
    const history: ChatMessage[] = [systemPrompt(SHAPE)];
    let previous: number[] = [];
    for (let turn = 0; turn < 3; turn++) {
      history.push(userMessage(SHAPE, 5, turn));
      const ids = tokenize(messagesText(turnBody(SHAPE, "c", history)["messages"]));
      expect(ids).toHaveLength(promptTokensOfTurn(SHAPE, turn));
      expect(ids.slice(0, previous.length)).toEqual(previous);
      previous = ids;
      history.push({ role: "assistant", content: words(100 + turn, SHAPE.replyTokens) });
    }
  });
});

describe("chatTurn", () => {
  test("reads the first content token's time, the answer's text and its usage from an emulated worker's stream", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", prefillMs: 30, tokenMs: 60 });
    const endpoint = endpointOf(worker.url);
    const conn = await HttpConnection.open(endpoint.hostname, endpoint.port);
    const body = turnBody(SHAPE, "c", [systemPrompt(SHAPE), userMessage(SHAPE, 0, 0)]);
    const answer = await chatTurn(conn, postRequest(endpoint.host, "/v1/chat/completions", JSON.stringify(body)));
    conn.close();
    expect(answer.status).toBe(200);
    expect(answer.done).toBe(true);
    expect(answer.content.trim().split(" ")).toHaveLength(SHAPE.replyTokens);
    expect(answer.promptTokens).toBe(promptTokensOfTurn(SHAPE, 0));
    expect(answer.cachedTokens).toBe(0);
    // The first token comes after the prefill, the other three 60 ms apart (timers may fire a little
    // early). Only lower bounds: a loaded machine can read the first token late, and the tokens
    // behind it then arrive together, so the gap after it is checked with a wide margin (90 of 180 ms).
    expect(answer.ttftMs).toBeGreaterThanOrEqual(28);
    expect(answer.totalMs - (answer.ttftMs ?? 0)).toBeGreaterThanOrEqual(90);
  });
});
