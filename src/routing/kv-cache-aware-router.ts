/**
 * The `kv_cache_aware` router (trtllm-serve's KvCacheAwareRouter): sends a request where most of
 * its prompt is already cached, unless that worker is busy. For each candidate,
 *
 *   score = matched prefix tokens / max(prompt blocks × tokens_per_block, 1)
 *           − in-flight requests / max_batch_size
 *
 * (in-flight requests from the reservation table, blended with the worker's own report when
 * workers' load is polled: worker-loads.ts); the highest wins, ties round-robin.
 *
 * Exploration (not upstream's): a worker that joins with an empty cache while every other one
 * matches a shared system prompt would never win a score, so never warm up. One pick in
 * EXPLORE_EVERY goes to a starved candidate — one given less than a quarter of its fair share
 * of the last RECENT_PICKS picks. Once it holds the shared prefix it ties with the others and
 * is no longer starved, so exploration stops by itself and cached prefixes keep their reuse.
 *
 * What is matched:
 * - With token ids (a completions prompt given as ids, or ids from the context answer): the
 *   prompt's chained `v1_block_key` hashes of tokens_per_block tokens, exactly as the engine
 *   computes them, against the block hashes the worker reported in its KV cache events
 *   (`stored` adds, `removed` drops, `created` empties). The worker is polled after every
 *   request that finished on it.
 * - Without token ids (there is no tokenizer in the proxy): the chained hashes of the rendered
 *   prompt text (promptTextOf) in windows of tokens_per_block × 4 UTF-16 code units, against the
 *   text blocks of the prompts this router itself placed on that worker and that finished
 *   successfully (the most recent MAX_PLACED_TEXT_BLOCKS). A matched text block is counted as
 *   tokens_per_block tokens, and the worker is assumed to still hold them: the worker's own
 *   events cannot be used, because its hashes are over token ids the proxy cannot compute.
 */

import { matchedDepth } from "./block-hash.ts";
import type { KvEvent } from "./kv-events.ts";
import { LruSet } from "./lru-set.ts";
import { inFlightOf, type Router, type RouterContext, type RouterPick } from "./router-contract.ts";
import { matchedTokensOf, promptBlocks, type PromptBlocks, type RoutingRequest } from "./routing-request.ts";
import { plainPick, roundRobinCursor } from "./simple-routers.ts";
import type { WorkerEntry } from "../workers/worker-pool.ts";

/** Block hashes learned from one worker's events, kept at most (the newest stored). */
export const MAX_LEARNED_BLOCKS = 262_144;
/** Text blocks remembered per worker from the router's own placements. */
export const MAX_PLACED_TEXT_BLOCKS = 65_536;

export interface KvCacheLimits {
  readonly maxLearnedBlocks: number;
  readonly maxPlacedTextBlocks: number;
}

/** Picks remembered to judge each worker's share. */
export const RECENT_PICKS = 64;
/** At most one pick in this many explores. */
export const EXPLORE_EVERY = 8;

const LIMITS: KvCacheLimits = { maxLearnedBlocks: MAX_LEARNED_BLOCKS, maxPlacedTextBlocks: MAX_PLACED_TEXT_BLOCKS };

interface WorkerCache {
  readonly learned: LruSet<bigint>;
  readonly placedText: LruSet<bigint>;
}

export class KvCacheAwareRouter implements Router {
  readonly #workers = new Map<string, WorkerCache>();
  readonly #next = roundRobinCursor();
  readonly #context: RouterContext;
  readonly #limits: KvCacheLimits;
  readonly #tokensPerBlock: number;
  readonly #maxBatchSize: number;
  /** The last RECENT_PICKS picks (origins), oldest first, and how often each origin appears in them. */
  readonly #recent: string[] = [];
  readonly #recentCount = new Map<string, number>();
  #picks = 0;

  constructor(context: RouterContext, limits: KvCacheLimits = LIMITS) {
    this.#context = context;
    this.#limits = limits;
    this.#tokensPerBlock = context.options.tokensPerBlock ?? 32;
    this.#maxBatchSize = Math.max(context.options.maxBatchSize ?? 64, 1);
    context.events.listen((origin, events) => this.#learn(origin, events));
  }

  pick(candidates: readonly WorkerEntry[], request: RoutingRequest | undefined): RouterPick | undefined {
    if (request === undefined)
      return plainPick(
        this.#best(candidates, () => 0),
        request,
      );
    const blocks = promptBlocks(request, { tokensPerBlock: this.#tokensPerBlock, preferTokenIds: true, skipTokens: 0 });
    const depths = new Map<string, number>();
    const depthOn = (worker: WorkerEntry): number => {
      const cache = this.#cache(worker.origin);
      const table = blocks.kind === "tokens" ? cache.learned : cache.placedText;
      const depth = matchedDepth(blocks.hashes, (hash) => table.has(hash));
      depths.set(worker.origin, depth);
      return depth;
    };
    const worker = this.#explore(candidates) ?? this.#best(candidates, depthOn, blocks);
    if (worker === undefined) return undefined;
    this.#remember(worker.origin);
    if (!depths.has(worker.origin)) depthOn(worker);
    return { worker, matchedTokens: matchedTokensOf(blocks, depths.get(worker.origin) ?? 0), totalTokens: blocks.totalTokens };
  }

  /** Remembers a successful prompt's text blocks on the worker, then reads the worker's events. */
  finished(worker: WorkerEntry, request: RoutingRequest, success: boolean): Promise<void> {
    const cache = this.#cache(worker.origin);
    if (success && (request.knownBlocks?.text !== undefined || request.promptText.length > 1)) {
      const text = promptBlocks(request, { tokensPerBlock: this.#tokensPerBlock, preferTokenIds: false, skipTokens: 0 });
      addDeepestFirst(cache.placedText, text.hashes);
    }
    return this.#context.events.poll(worker.origin);
  }

  #best(candidates: readonly WorkerEntry[], depthOn: (worker: WorkerEntry) => number, blocks?: PromptBlocks): WorkerEntry | undefined {
    const padded = Math.max((blocks?.hashes.length ?? 0) * this.#tokensPerBlock, 1);
    let best = Number.NEGATIVE_INFINITY;
    let tied: WorkerEntry[] = [];
    for (const worker of candidates) {
      const score = (depthOn(worker) * this.#tokensPerBlock) / padded - inFlightOf(this.#context, worker.origin) / this.#maxBatchSize;
      if (score > best) {
        best = score;
        tied = [worker];
      } else if (score === best) tied.push(worker);
    }
    return this.#next(tied);
  }

  /** A starved candidate on every EXPLORE_EVERY-th pick, once enough picks were seen to judge shares. */
  #explore(candidates: readonly WorkerEntry[]): WorkerEntry | undefined {
    this.#picks++;
    if (candidates.length < 2 || this.#picks % EXPLORE_EVERY !== 0) return undefined;
    if (this.#recent.length < candidates.length * EXPLORE_EVERY) return undefined;
    const floor = this.#recent.length / candidates.length / 4;
    let starved: WorkerEntry | undefined;
    for (const worker of candidates) {
      const count = this.#recentCount.get(worker.origin) ?? 0;
      if (count < floor && (starved === undefined || count < (this.#recentCount.get(starved.origin) ?? 0))) starved = worker;
    }
    return starved;
  }

  #remember(origin: string): void {
    this.#recent.push(origin);
    this.#recentCount.set(origin, (this.#recentCount.get(origin) ?? 0) + 1);
    if (this.#recent.length <= RECENT_PICKS) return;
    const dropped = this.#recent.shift() ?? origin;
    const left = (this.#recentCount.get(dropped) ?? 1) - 1;
    if (left === 0) this.#recentCount.delete(dropped);
    else this.#recentCount.set(dropped, left);
  }

  #cache(origin: string): WorkerCache {
    let cache = this.#workers.get(origin);
    if (cache === undefined) {
      cache = { learned: new LruSet(this.#limits.maxLearnedBlocks), placedText: new LruSet(this.#limits.maxPlacedTextBlocks) };
      this.#workers.set(origin, cache);
    }
    return cache;
  }

  /** Events of a worker this router has routed to; other workers' are not its business. */
  #learn(origin: string, events: readonly KvEvent[]): void {
    const learned = this.#workers.get(origin)?.learned;
    if (learned === undefined) return;
    for (const event of events) {
      if (event.type === "created") learned.clear();
      else if (event.type === "stored") addDeepestFirst(learned, event.hashes);
      else for (const hash of event.hashes) learned.delete(hash);
    }
  }
}

/** Deepest block first, so a prefix is more recently used than its continuations and forgotten last. */
function addDeepestFirst(set: LruSet<bigint>, hashes: readonly bigint[]): void {
  for (let i = hashes.length - 1; i >= 0; i--) set.add(hashes[i] ?? 0n);
}
