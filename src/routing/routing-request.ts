/**
 * What a router may know of a request: its conversation, its prompt as text, and its prompt's
 * token ids when they are known. Without a tokenizer the proxy estimates tokens from text at
 * CHARS_PER_TOKEN characters a token, and hashes text in blocks of tokens_per_block ×
 * CHARS_PER_TOKEN characters, so one text block stands for about one block of tokens.
 */

import { createHash } from "node:crypto";
import type { JsonObject } from "../json/json.ts";
import { blockHashes, textBlockHashes } from "./block-hash.ts";
import { promptLengthOf as lengthOfPrompt, promptTextOf, promptTokenIdsOf, type PromptApi } from "./prompt-text.ts";

export interface RoutingRequest {
  /** conversation_params.conversation_id or a session header (the pipeline extracts it). */
  readonly conversationId: string | undefined;
  /**
   * A sub-agent's parent session, from the configured gateway header: routers that keep
   * conversations together place the request by it instead of its own conversation id
   * (upstream's get_request_routing_id, tensorrt_llm/serve/conversation_id.py id 65855423865).
   */
  readonly subagentAffinityId?: string | undefined;
  /** The prompt as text the router can hash without a tokenizer (see promptTextOf). */
  readonly promptText: string;
  /** promptText's length, when known without building it (routingRequestOf builds the text only when it is read). */
  readonly promptLength?: number;
  /** Token ids when known (completions prompt given as ids, or from an earlier context answer). */
  readonly promptTokenIds: readonly number[] | undefined;
  /** How many ids, when known without reading them (a context answer's ids are read only if a router wants them). */
  readonly promptTokenCount?: number | undefined;
  /** The body's `model`: placement keeps to the workers serving it (routing/model-choice.ts). */
  readonly model?: string | undefined;
  /**
   * Block hashes the serving process already made (a coordinator's /select key,
   * routing/coordinator-wire.ts), used instead of hashing the prompt: over token ids, over text.
   */
  readonly knownBlocks?: KnownBlocks | undefined;
  /** The worker-bound body as the client sent it: what a router server is given to place (remote_http). */
  readonly body?: JsonObject | undefined;
}

export interface KnownBlocks {
  readonly tokens?: readonly bigint[] | undefined;
  readonly text?: readonly bigint[] | undefined;
}

/** The RoutingRequest of a worker-bound body; the conversation id comes from the caller. */
export function routingRequestOf(
  api: PromptApi,
  body: JsonObject,
  conversationId: string | undefined,
  subagentAffinityId?: string,
): RoutingRequest {
  const model = typeof body["model"] === "string" ? body["model"] : undefined;
  return withTokenIds(
    { conversationId, subagentAffinityId, model, body, promptText: () => promptTextOf(api, body), promptLength: lengthOfPrompt(api, body) },
    promptTokenIdsOf(api, body),
  );
}

/**
 * The same request with token ids known (an earlier context answer's): its prompt text is
 * still built only if a router reads it, once. Most routers never do (they weigh the prompt
 * by its length), and the text copies every message of the request. Ids given as a function
 * with their count are read only if a router wants them, once.
 */
export function withPromptTokenIds(
  request: RoutingRequest,
  promptTokenIds: readonly number[] | (() => readonly number[]),
  count?: number,
): RoutingRequest {
  return withTokenIds(
    {
      conversationId: request.conversationId,
      subagentAffinityId: request.subagentAffinityId,
      model: request.model,
      body: request.body,
      promptText: () => request.promptText,
      promptLength: promptLengthOf(request),
    },
    promptTokenIds,
    count,
  );
}

function withTokenIds(
  lazy: {
    conversationId: string | undefined;
    subagentAffinityId?: string | undefined;
    model: string | undefined;
    body?: JsonObject | undefined;
    promptText: () => string;
    promptLength: number;
  },
  promptTokenIds: readonly number[] | (() => readonly number[]) | undefined,
  count?: number,
): RoutingRequest {
  return new LazyRoutingRequest(lazy, promptTokenIds, count);
}

/**
 * A request whose prompt text and ids are made when first read. A class, not a literal with
 * getters: a literal makes its getter functions anew for every request (two per request).
 */
class LazyRoutingRequest implements RoutingRequest {
  readonly conversationId: string | undefined;
  readonly model: string | undefined;
  readonly subagentAffinityId: string | undefined;
  readonly body: JsonObject | undefined;
  readonly promptLength: number;
  readonly promptTokenCount: number | undefined;
  #text: string | undefined;
  // Released once the text is built: until then it holds the request's body.
  #build: (() => string) | undefined;
  #ids: readonly number[] | undefined;
  #readIds: (() => readonly number[]) | undefined;

  constructor(
    lazy: Parameters<typeof withTokenIds>[0],
    promptTokenIds: readonly number[] | (() => readonly number[]) | undefined,
    count: number | undefined,
  ) {
    this.conversationId = lazy.conversationId;
    this.model = lazy.model;
    this.subagentAffinityId = lazy.subagentAffinityId;
    this.body = lazy.body;
    this.promptLength = lazy.promptLength;
    this.#build = lazy.promptText;
    this.#ids = typeof promptTokenIds === "function" ? undefined : promptTokenIds;
    this.#readIds = typeof promptTokenIds === "function" ? promptTokenIds : undefined;
    this.promptTokenCount = count ?? this.#ids?.length;
  }

  get promptText(): string {
    if (this.#text === undefined) {
      this.#text = this.#build?.() ?? "";
      this.#build = undefined;
    }
    return this.#text;
  }

  get promptTokenIds(): readonly number[] | undefined {
    if (this.#readIds !== undefined) {
      this.#ids = this.#readIds();
      this.#readIds = undefined;
    }
    return this.#ids;
  }
}

function tokenCountOf(request: RoutingRequest): number | undefined {
  return request.promptTokenCount ?? request.promptTokenIds?.length;
}

function promptLengthOf(request: RoutingRequest): number {
  return request.promptLength ?? request.promptText.length;
}

export const NO_ROUTING: RoutingRequest = Object.freeze({ conversationId: undefined, promptText: "", promptTokenIds: undefined });

export const CHARS_PER_TOKEN = 4;
/** Upstream's content weight: "approximately 4 characters per token + 1 space". */
const WEIGHT_CHARS_PER_TOKEN = 5;

/** Prompt tokens: the ids when known, else the text's length at CHARS_PER_TOKEN a token. */
export function estimatedPromptTokens(request: RoutingRequest | undefined): number {
  if (request === undefined) return 0;
  return tokenCountOf(request) ?? Math.ceil(promptLengthOf(request) / CHARS_PER_TOKEN);
}

/** The load a request adds to its worker until it ends: tokens when known, else chars/5; at least 1. */
export function contentWeight(request: RoutingRequest | undefined): number {
  if (request === undefined) return 1;
  const tokens = tokenCountOf(request) ?? Math.floor(promptLengthOf(request) / WEIGHT_CHARS_PER_TOKEN);
  return Math.max(tokens, 1);
}

/** A prompt's chained block hashes and what they stand for. */
export interface PromptBlocks {
  readonly hashes: readonly bigint[];
  /** Hashed over token ids (comparable with a worker's KV events) or over text code units. */
  readonly kind: "tokens" | "text";
  /** Tokens one block stands for (estimated for text). */
  readonly blockTokens: number;
  /** The prompt's tokens (estimated for text). */
  readonly totalTokens: number;
}

export interface BlockOptions {
  readonly tokensPerBlock: number;
  /** Hash the token ids when the request carries them; text otherwise. */
  readonly preferTokenIds: boolean;
  /** Leading tokens left out (× CHARS_PER_TOKEN characters of text). */
  readonly skipTokens: number;
}

/** O(prompt length). */
export function promptBlocks(request: RoutingRequest, options: BlockOptions): PromptBlocks {
  const known = request.knownBlocks;
  if (known !== undefined) return knownPromptBlocks(request, known, options);
  const ids = options.preferTokenIds ? request.promptTokenIds : undefined;
  if (ids !== undefined) {
    return {
      hashes: blockHashes(ids, options.tokensPerBlock, options.skipTokens),
      kind: "tokens",
      blockTokens: options.tokensPerBlock,
      totalTokens: ids.length,
    };
  }
  const text = request.promptText;
  return {
    hashes: textBlockHashes(text, options.tokensPerBlock * CHARS_PER_TOKEN, options.skipTokens * CHARS_PER_TOKEN),
    kind: "text",
    blockTokens: options.tokensPerBlock,
    totalTokens: estimatedPromptTokens(request),
  };
}

/** The hashes a serving process sent: token-id hashes when the router prefers them and they came, else text hashes. */
function knownPromptBlocks(request: RoutingRequest, known: KnownBlocks, options: BlockOptions): PromptBlocks {
  const tokens = options.preferTokenIds ? known.tokens : undefined;
  const hashes = tokens ?? known.text ?? [];
  return {
    hashes,
    kind: tokens === undefined ? "text" : "tokens",
    blockTokens: options.tokensPerBlock,
    totalTokens: estimatedPromptTokens(request),
  };
}

/** Tokens of a prefix `depth` blocks deep, never more than the prompt has. */
export function matchedTokensOf(blocks: PromptBlocks, depth: number): number {
  return Math.min(depth * blocks.blockTokens, blocks.totalTokens);
}

/** A routing key longer than this is kept as its digest. */
const MAX_ROUTING_KEY_LENGTH = 256;

/**
 * The key a conversation-keeping router places a request by: a sub-agent's parent session when
 * the edge set one, else its own conversation (upstream's get_request_routing_id). A client
 * names its conversation freely (`prompt_cache_key`, `conversation_params`, up to a body's
 * size) and the router keeps max_sessions of them, so a long one is kept as its SHA-256:
 * 100,000 ids of 1 MB each would otherwise hold 100 GB.
 */
export function routingKeyOf(request: RoutingRequest): string | undefined {
  const key = request.subagentAffinityId ?? request.conversationId;
  if (key === undefined || key.length <= MAX_ROUTING_KEY_LENGTH) return key;
  return `sha256:${createHash("sha256").update(key).digest("hex")}`;
}

/** The same request without its parent session: a fleet outside the affinity scope places it by its own conversation. */
export function withoutSubagentAffinity(request: RoutingRequest): RoutingRequest {
  if (request.subagentAffinityId === undefined) return request;
  // Getters, not a spread: the prompt text and ids stay unbuilt until a router reads them.
  return {
    conversationId: request.conversationId,
    model: request.model,
    body: request.body,
    get promptText(): string {
      return request.promptText;
    },
    ...(request.promptLength === undefined ? {} : { promptLength: request.promptLength }),
    get promptTokenIds(): readonly number[] | undefined {
      return request.promptTokenIds;
    },
    promptTokenCount: request.promptTokenCount,
  };
}
