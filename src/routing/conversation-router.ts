/**
 * The `conversation` router (trtllm-serve's ConversationRouter): keeps the turns of a
 * conversation on one worker, where its earlier turns' KV cache is.
 *
 * 1. Sticky: a request with a conversation id goes where that conversation went, if that worker
 *    is a candidate. A new id skips step 2. A sub-agent's id here is its parent's session (its
 *    routing key), so it lands where the parent's conversation went.
 * 2. Implicit: a request without an id continues the conversation whose last prompt shares the
 *    longest prefix of block hashes with it, when matched blocks / prompt blocks ≥
 *    match_threshold. Text is hashed in blocks of tokens_per_block × 4 characters (token ids,
 *    with use_token_ids, in blocks of tokens_per_block).
 * 3. Otherwise the least loaded candidate by content weight (tokens, or characters / 5) of the
 *    requests it holds; ties round-robin. An id-less request starts an implicit conversation
 *    `conv_id:<node_id>_<n>`.
 *
 * Memory is bounded: at most max_sessions conversations and MAX_INDEX_NODES trie nodes, the least
 * recently used conversation forgotten first. A pick costs O(prompt length).
 */

import { leastLoadedOf, plainPick, roundRobinCursor } from "./simple-routers.ts";
import { PrefixIndex } from "./prefix-index.ts";
import type { Router, RouterContext, RouterPick } from "./router-contract.ts";
import {
  matchedTokensOf,
  promptBlocks,
  routingKeyOf,
  type BlockOptions,
  type PromptBlocks,
  type RoutingRequest,
} from "./routing-request.ts";
import type { WorkerEntry } from "../workers/worker-pool.ts";

/** Trie nodes kept at most (about 50 MB at the bound). */
export const MAX_INDEX_NODES = 262_144;

export interface ConversationLimits {
  readonly maxIndexNodes: number;
}

interface Conversation {
  readonly origin: string;
  readonly hashes: readonly bigint[];
}

interface Continued {
  readonly conversation: string;
  readonly worker: WorkerEntry;
  readonly depth: number;
}

export class ConversationRouter implements Router {
  /** In least recently used order: the first entry is forgotten first. */
  readonly #conversations = new Map<string, Conversation>();
  readonly #index = new PrefixIndex();
  readonly #next = roundRobinCursor();
  readonly #context: RouterContext;
  readonly #blocks: BlockOptions;
  readonly #threshold: number;
  readonly #maxConversations: number;
  readonly #maxIndexNodes: number;
  #implicitCount = 0;

  constructor(context: RouterContext, limits: ConversationLimits = { maxIndexNodes: MAX_INDEX_NODES }) {
    const { options } = context;
    this.#context = context;
    this.#blocks = {
      tokensPerBlock: options.tokensPerBlock ?? 128,
      preferTokenIds: options.useTokenIds ?? false,
      skipTokens: options.hashSkipCount ?? 0,
    };
    this.#threshold = options.matchThreshold ?? 0.75;
    this.#maxConversations = Math.max(options.maxSessions ?? 100_000, 1);
    this.#maxIndexNodes = Math.max(limits.maxIndexNodes, 1);
  }

  /** Conversations remembered. */
  get conversations(): number {
    return this.#conversations.size;
  }

  /** Trie nodes held. */
  get indexNodes(): number {
    return this.#index.size;
  }

  pick(candidates: readonly WorkerEntry[], request: RoutingRequest | undefined): RouterPick | undefined {
    if (request === undefined) return plainPick(this.#leastLoaded(candidates), request);
    const blocks = promptBlocks(request, this.#blocks);
    // A sub-agent goes where its parent's conversation went (docs/source/features/subagent-routing.md @ 83dd989e).
    const key = routingKeyOf(request);
    const id = key === "" ? undefined : key;
    const continued = id === undefined ? this.#implicit(blocks, candidates) : this.#sticky(id, blocks, candidates);
    if (continued !== undefined) {
      this.#remember(continued.conversation, continued.worker.origin, blocks.hashes);
      return { worker: continued.worker, matchedTokens: matchedTokensOf(blocks, continued.depth), totalTokens: blocks.totalTokens };
    }
    const worker = this.#leastLoaded(candidates);
    if (worker === undefined) return undefined;
    this.#remember(id ?? this.#implicitId(), worker.origin, blocks.hashes);
    return { worker, matchedTokens: 0, totalTokens: blocks.totalTokens };
  }

  #sticky(id: string, blocks: PromptBlocks, candidates: readonly WorkerEntry[]): Continued | undefined {
    const known = this.#conversations.get(id);
    // One scan, no allocation: a pick in a fleet of hundreds builds nothing per candidate.
    const worker = known === undefined ? undefined : candidates.find((candidate) => candidate.origin === known.origin);
    if (known === undefined || worker === undefined) return undefined;
    let depth = 0;
    while (depth < known.hashes.length && known.hashes[depth] === blocks.hashes[depth]) depth++;
    return { conversation: id, worker, depth };
  }

  #implicit(blocks: PromptBlocks, candidates: readonly WorkerEntry[]): Continued | undefined {
    if (blocks.hashes.length === 0) return undefined;
    // The candidates by origin, made only when the index holds some prefix of the prompt.
    let byOrigin: ReadonlyMap<string, WorkerEntry> | undefined;
    const candidate = (origin: string): WorkerEntry | undefined =>
      (byOrigin ??= new Map(candidates.map((worker) => [worker.origin, worker]))).get(origin);
    const match = this.#index.longestMatch(blocks.hashes, (origin) => candidate(origin) !== undefined);
    const worker = match === undefined ? undefined : candidate(match.origin);
    if (match === undefined || worker === undefined) return undefined;
    if (match.depth / blocks.hashes.length < this.#threshold) return undefined;
    return { conversation: match.conversation, worker, depth: match.depth };
  }

  #leastLoaded(candidates: readonly WorkerEntry[]): WorkerEntry | undefined {
    const { table, role } = this.#context;
    return leastLoadedOf(candidates, (worker) => table.weight(role, worker.origin), this.#next);
  }

  #implicitId(): string {
    this.#implicitCount++;
    return `conv_id:${this.#context.nodeId}_${this.#implicitCount}`;
  }

  /**
   * The conversation's latest prompt, on its worker, as the most recently used. A next turn on
   * the same worker extends the last prompt: only the blocks after their common prefix are
   * filed anew (an agent's 100 KB prompt is ~800 blocks, all of them re-filed each turn before).
   */
  #remember(id: string, origin: string, hashes: readonly bigint[]): void {
    const kept = hashes.length > this.#maxIndexNodes ? hashes.slice(0, this.#maxIndexNodes) : hashes;
    const known = this.#conversations.get(id);
    const common = known?.origin === origin ? commonPrefix(known.hashes, kept) : 0;
    if (known !== undefined) {
      this.#conversations.delete(id);
      this.#index.remove(id, known.origin, common === 0 ? known.hashes : known.hashes.slice(common));
    }
    this.#conversations.set(id, { origin, hashes: kept });
    this.#index.insert(id, origin, common === 0 ? kept : kept.slice(common));
    while (this.#conversations.size > 1 && (this.#conversations.size > this.#maxConversations || this.#index.size > this.#maxIndexNodes)) {
      const oldest = this.#conversations.keys().next();
      if (oldest.done === true) break;
      this.#forget(oldest.value);
    }
  }

  #forget(id: string): void {
    const known = this.#conversations.get(id);
    if (known === undefined) return;
    this.#conversations.delete(id);
    this.#index.remove(id, known.origin, known.hashes);
  }
}

/** How many leading hashes two prompts share. */
function commonPrefix(a: readonly bigint[], b: readonly bigint[]): number {
  let n = 0;
  while (n < a.length && n < b.length && a[n] === b[n]) n++;
  return n;
}
