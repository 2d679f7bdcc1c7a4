/**
 * The text of the multi-turn conversations benchmark, the same in every run: a system prompt
 * every conversation shares, then per turn a user message of fresh words; each turn's request
 * carries every earlier turn (user message and the assistant's streamed answer) before the new
 * one, so a conversation's prompts grow by a turn each time and each starts with the one before.
 *
 * Words are three lower-case letters: the emulated worker counts one token per word, and with
 * the separating space a word is the 4 characters per token the proxy assumes when it hashes
 * prompt text without a tokenizer, so its text blocks line up with the workers' token blocks.
 */

import type { JsonObject } from "../../src/json/json.ts";

export interface ConversationShape {
  /** Words of the system prompt all conversations share. */
  readonly systemTokens: number;
  /** Words of each user message. */
  readonly userTokens: number;
  /** The assistant's answer per turn, in tokens (max_tokens). */
  readonly replyTokens: number;
}

export interface ChatMessage {
  readonly role: "system" | "user" | "assistant";
  readonly content: string;
}

const LETTERS = "abcdefghijklmnopqrstuvwxyz";
const SYSTEM_SEED = 0x5eed;

/** A small seeded generator (mulberry32): the same seed gives the same words on every run. */
function randomOf(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state + 0x6d2b79f5) >>> 0;
    let t = state;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
  };
}

export function words(seed: number, count: number): string {
  const random = randomOf(seed);
  const letter = (): string => LETTERS[Math.floor(random() * LETTERS.length)] ?? "a";
  return Array.from({ length: count }, () => `${letter()}${letter()}${letter()}`).join(" ");
}

export function systemPrompt(shape: ConversationShape): ChatMessage {
  return { role: "system", content: words(SYSTEM_SEED, shape.systemTokens) };
}

/** The user message of turn `turn` (from 0) of conversation `conversation`. */
export function userMessage(shape: ConversationShape, conversation: number, turn: number): ChatMessage {
  return { role: "user", content: words(1 + conversation * 1000 + turn, shape.userTokens) };
}

/** The streamed chat request of one turn: the conversation so far, named by conversation_params. */
export function turnBody(shape: ConversationShape, conversationId: string, messages: readonly ChatMessage[]): JsonObject {
  return {
    model: "emulated-model",
    messages: messages.map((m) => ({ role: m.role, content: m.content })),
    max_tokens: shape.replyTokens,
    stream: true,
    stream_options: { include_usage: true },
    conversation_params: { conversation_id: conversationId },
  };
}

/** Prompt tokens of turn `turn` (from 0) as the emulated worker counts them (one per word). */
export function promptTokensOfTurn(shape: ConversationShape, turn: number): number {
  return shape.systemTokens + (turn + 1) * shape.userTokens + turn * shape.replyTokens;
}
