/**
 * The emulated worker's KV cache of prompt prefixes: full blocks of tokensPerBlock prompt token
 * ids, named by their chained hashes, at most capacityBlocks of them, the least recently used
 * evicted first (a prefix is touched after its continuations, so leaves go before their roots).
 * A prompt's cached part is its longest prefix of cached blocks; the prefill is charged only for
 * the rest. Blocks are stored when a request is admitted (an aborted prefill still leaves them).
 *
 * `POST /kv_cache_events` answers the events since the last call, as trtllm-serve does with
 * `event_buffer_max_size` set: `created` once, `stored` for new blocks (a run of consecutive
 * blocks per event, with its parent's hash), `removed` for evicted ones. Unread events are
 * bounded: beyond 2 × maxEvents the oldest are dropped, down to maxEvents.
 */

import { jsonInteger, type JsonObject } from "../../json/json.ts";
import { fullBlockHashes } from "./kv-block-hash.ts";

export interface KvCacheOptions {
  readonly tokensPerBlock: number;
  /** 0 turns the cache off. */
  readonly capacityBlocks: number;
  readonly maxEvents: number;
}

export interface KvLookup {
  readonly ids: readonly number[];
  readonly hashes: readonly bigint[];
  /** Leading prompt tokens already cached. */
  readonly cachedTokens: number;
}

/** TensorRT-LLM's default block priority. */
const PRIORITY = 35;

export class KvBlockCache {
  readonly #options: KvCacheOptions;
  /** Insertion order is recency: the first block is evicted first. */
  readonly #blocks = new Set<bigint>();
  #events: JsonObject[] = [];
  #nextEventId = 0;

  constructor(options: KvCacheOptions) {
    this.#options = options;
    this.#emit({ type: "created", num_blocks_per_cache_level: [options.capacityBlocks, 0] });
  }

  /** Blocks held now (the worker's reported KV cache utilization is this over the capacity). */
  get usedBlocks(): number {
    return this.#blocks.size;
  }

  lookup(ids: readonly number[]): KvLookup {
    if (this.#options.capacityBlocks <= 0) return { ids, hashes: [], cachedTokens: 0 };
    const hashes = fullBlockHashes(ids, this.#options.tokensPerBlock);
    let depth = 0;
    while (depth < hashes.length && this.#blocks.has(hashes[depth] ?? 0n)) depth++;
    return { ids, hashes, cachedTokens: depth * this.#options.tokensPerBlock };
  }

  /** Caches the looked-up prompt's blocks, evicting as needed. */
  store(lookup: KvLookup): void {
    const { hashes } = lookup;
    let run: { parent: bigint | undefined; blocks: JsonObject[]; last: number } | undefined;
    for (let i = 0; i < hashes.length; i++) {
      const hash = hashes[i] ?? 0n;
      if (this.#blocks.has(hash)) continue;
      const block = this.#storedBlock(lookup, i);
      if (run !== undefined && run.last === i - 1) {
        run.blocks.push(block);
        run.last = i;
      } else {
        if (run !== undefined) this.#emitStored(run.parent, run.blocks);
        run = { parent: i === 0 ? undefined : hashes[i - 1], blocks: [block], last: i };
      }
    }
    if (run !== undefined) this.#emitStored(run.parent, run.blocks);
    for (let i = hashes.length - 1; i >= 0; i--) {
      const hash = hashes[i] ?? 0n;
      this.#blocks.delete(hash);
      this.#blocks.add(hash);
    }
    const removed: bigint[] = [];
    for (const oldest of this.#blocks) {
      if (this.#blocks.size - removed.length <= this.#options.capacityBlocks) break;
      removed.push(oldest);
    }
    for (const hash of removed) this.#blocks.delete(hash);
    if (removed.length > 0) this.#emit({ type: "removed", block_hashes: removed.map(jsonInteger) });
  }

  /** The events since the last call. */
  takeEvents(): JsonObject[] {
    const events = this.#events;
    this.#events = [];
    return events;
  }

  #storedBlock(lookup: KvLookup, index: number): JsonObject {
    const size = this.#options.tokensPerBlock;
    const tokens = lookup.ids.slice(index * size, (index + 1) * size);
    return {
      type: "stored_block",
      block_hash: jsonInteger(lookup.hashes[index] ?? 0n),
      tokens: tokens.map((id) => ({ type: "unique_token", token_id: id, token_extra_id: 0 })),
      cache_level: 0,
      priority: PRIORITY,
    };
  }

  #emitStored(parent: bigint | undefined, blocks: JsonObject[]): void {
    this.#emit({ type: "stored", parent_hash: parent === undefined ? null : jsonInteger(parent), blocks });
  }

  #emit(data: JsonObject): void {
    const { tokensPerBlock, capacityBlocks, maxEvents } = this.#options;
    this.#events.push({ event_id: this.#nextEventId++, data, window_size: tokensPerBlock * capacityBlocks });
    if (this.#events.length > 2 * maxEvents) this.#events.splice(0, this.#events.length - maxEvents);
  }
}
