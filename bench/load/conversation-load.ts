/**
 * The conversations load: `clients` users, each on its own keep-alive connection, take the next
 * conversation not yet started and play its turns one after another, each turn sent as soon as
 * the previous answer ended (a closed loop per user). A failed turn ends its conversation (its
 * history would be wrong); the user moves on to the next one.
 */

import { HttpConnection } from "../http/connection.ts";
import { postRequest } from "../http/exchange.ts";
import type { Endpoint } from "./paths.ts";
import { chatTurn } from "./chat-turn.ts";
import { systemPrompt, turnBody, userMessage, type ChatMessage, type ConversationShape } from "./conversation-script.ts";

export interface ConversationLoad extends ConversationShape {
  /** Conversations firstConversation (default 0) … conversations − 1 are played. */
  readonly conversations: number;
  readonly firstConversation?: number;
  readonly turns: number;
  readonly clients: number;
}

export interface TurnRecord {
  readonly conversation: number;
  /** From 0. */
  readonly turn: number;
  readonly ttftMs: number;
  readonly totalMs: number;
  /** The answer's usage: the prompt and the part of it the prefilling worker had cached. */
  readonly promptTokens: number;
  readonly cachedTokens: number;
}

export interface LoadOutcome {
  readonly turns: TurnRecord[];
  readonly errors: number;
  readonly errorSamples: string[];
  /** First request written → last answer ended. */
  readonly seconds: number;
}

const MAX_ERROR_SAMPLES = 5;

export async function runConversations(proxy: Endpoint, load: ConversationLoad): Promise<LoadOutcome> {
  const outcome = { turns: [] as TurnRecord[], errors: 0, errorSamples: [] as string[], seconds: 0 };
  const fail = (message: string): void => {
    outcome.errors++;
    if (outcome.errorSamples.length < MAX_ERROR_SAMPLES) outcome.errorSamples.push(message);
  };
  let next = load.firstConversation ?? 0;
  const user = async (): Promise<void> => {
    let conn = await HttpConnection.open(proxy.hostname, proxy.port);
    try {
      for (let conversation = next++; conversation < load.conversations; conversation = next++) {
        if (conn.closed) conn = await HttpConnection.open(proxy.hostname, proxy.port);
        // oxlint-disable-next-line no-await-in-loop -- a user plays one conversation at a time
        await playConversation(conn, proxy, load, conversation, outcome.turns, fail);
      }
    } finally {
      conn.close();
    }
  };
  const started = performance.now();
  await Promise.all(Array.from({ length: load.clients }, user));
  outcome.seconds = (performance.now() - started) / 1000;
  return outcome;
}

async function playConversation(
  conn: HttpConnection,
  proxy: Endpoint,
  load: ConversationLoad,
  conversation: number,
  records: TurnRecord[],
  fail: (message: string) => void,
): Promise<void> {
  const id = `bench-conversation-${conversation}`;
  const history: ChatMessage[] = [systemPrompt(load)];
  for (let turn = 0; turn < load.turns; turn++) {
    history.push(userMessage(load, conversation, turn));
    const request = postRequest(proxy.host, "/v1/chat/completions", JSON.stringify(turnBody(load, id, history)));
    try {
      // oxlint-disable-next-line no-await-in-loop -- each turn carries the answer of the one before
      const answer = await chatTurn(conn, request);
      if (answer.status !== 200 || !answer.done || answer.ttftMs === undefined || answer.promptTokens === undefined) {
        fail(
          `conversation ${conversation} turn ${turn}: HTTP ${answer.status}${answer.done ? "" : ", no [DONE]"}${answer.promptTokens === undefined ? ", no usage" : ""}`,
        );
        return;
      }
      records.push({
        conversation,
        turn,
        ttftMs: answer.ttftMs,
        totalMs: answer.totalMs,
        promptTokens: answer.promptTokens,
        cachedTokens: answer.cachedTokens ?? 0,
      });
      history.push({ role: "assistant", content: answer.content.trim() });
    } catch (error) {
      fail(`conversation ${conversation} turn ${turn}: ${error instanceof Error ? error.message : String(error)}`);
      return;
    }
  }
}
