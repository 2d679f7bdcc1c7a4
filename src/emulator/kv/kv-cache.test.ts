import { describe, expect, test } from "bun:test";
import { parseJson, type JsonValue } from "../../json/json.ts";
import { KvBlockCache } from "./kv-cache.ts";
import { at, json, post } from "../test-support.ts";
import { startEmulatedWorker } from "../worker.ts";

function words(from: number, count: number): string {
  return Array.from({ length: count }, (_, i) => `w${from + i}`).join(" ");
}

async function events(url: string): Promise<JsonValue> {
  const response = await fetch(`${url}/kv_cache_events`, { method: "POST" });
  return parseJson(await response.text());
}

describe("emulated KV cache", () => {
  test("a repeated prompt reports its cached full blocks and is charged prefill only for the rest", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", tokensPerBlock: 8, prefillMsPerToken: 4 });
    const prompt = words(0, 41);
    let started = performance.now();
    const first = await json(await post(worker.url, "/v1/completions", { prompt, max_tokens: 1 }));
    const firstMs = performance.now() - started;
    started = performance.now();
    const second = await json(await post(worker.url, "/v1/completions", { prompt, max_tokens: 1 }));
    const secondMs = performance.now() - started;
    expect(at(first, "usage", "prompt_tokens_details", "cached_tokens")).toBe(0);
    expect(at(second, "usage", "prompt_tokens_details", "cached_tokens")).toBe(40);
    expect(firstMs).toBeGreaterThanOrEqual(41 * 4 - 5);
    expect(secondMs).toBeLessThan(41 * 4 - 40);
  });

  test("POST /kv_cache_events answers created, then each run of new blocks with its parent, then nothing new", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", tokensPerBlock: 4 });
    expect(await events(worker.url)).toEqual([
      { event_id: 0, data: { type: "created", num_blocks_per_cache_level: [8192, 0] }, window_size: 4 * 8192 },
    ]);
    await post(worker.url, "/v1/completions", { prompt: words(0, 9), max_tokens: 1 }).then((r) => r.text());
    await post(worker.url, "/v1/completions", { prompt: words(0, 13), max_tokens: 1 }).then((r) => r.text());
    const stored = await events(worker.url);
    expect(at(stored, 0, "data", "parent_hash")).toBeNull();
    expect([0, 1].map((i) => (at(stored, 0, "data", "blocks", i, "tokens") as JsonValue[]).length)).toEqual([4, 4]);
    expect(at(stored, 1, "data", "parent_hash")).toEqual(at(stored, 0, "data", "blocks", 1, "block_hash"));
    expect(at(stored, 1, "data", "blocks")).toHaveLength(1);
    expect(at(stored, 1, "data", "blocks", 0, "tokens", 0)).toEqual({
      type: "unique_token",
      token_id: expect.any(Number),
      token_extra_id: 0,
    });
    expect(await events(worker.url)).toEqual([]);
  });

  test("a context phase and its generation phase both leave the prompt in their worker's cache", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", tokensPerBlock: 4 });
    const prompt = words(0, 9);
    const context = await json(
      await post(worker.url, "/v1/completions", { prompt, disaggregated_params: { request_type: "context_only" } }),
    );
    expect(at(context, "usage", "prompt_tokens_details", "cached_tokens")).toBe(0);
    const aggregated = await json(await post(worker.url, "/v1/completions", { prompt, max_tokens: 1 }));
    expect(at(aggregated, "usage", "prompt_tokens_details", "cached_tokens")).toBe(8);
  });

  test("a cached directive overrides the cache hit; kvCacheBlocks 0 caches nothing", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", tokensPerBlock: 4, kvCacheBlocks: 0 });
    const prompt = words(0, 9);
    await post(worker.url, "/v1/completions", { prompt, max_tokens: 1 }).then((r) => r.text());
    expect(
      at(
        await json(await post(worker.url, "/v1/completions", { prompt, max_tokens: 1 })),
        "usage",
        "prompt_tokens_details",
        "cached_tokens",
      ),
    ).toBe(0);
    const directed = await json(await post(worker.url, "/v1/completions", { prompt: `${prompt} [[emu cached=3]]`, max_tokens: 1 }));
    expect(at(directed, "usage", "prompt_tokens_details", "cached_tokens")).toBe(3);
  });
});

function ids(from: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => from + i);
}

describe("KvBlockCache", () => {
  test("evicts least recently used blocks first, continuations before their prefix, and reports them removed", () => {
    const cache = new KvBlockCache({ tokensPerBlock: 2, capacityBlocks: 3, maxEvents: 100 });
    const a = cache.lookup(ids(0, 7)); // blocks a0 a1 a2
    cache.store(a);
    cache.takeEvents();
    const b = cache.lookup(ids(100, 3)); // block b0
    cache.store(b);
    // a2 (the deepest, least recently touched) made room for b0.
    expect(cache.lookup(ids(0, 7)).cachedTokens).toBe(4);
    const removed = cache.takeEvents().find((event) => at(event, "data", "type") === "removed");
    expect(at(removed, "data", "block_hashes")).toEqual([expect.anything()]);
  });

  test("keeps at most twice maxEvents unread events, dropping the oldest", () => {
    const cache = new KvBlockCache({ tokensPerBlock: 1, capacityBlocks: 1000, maxEvents: 3 });
    for (let i = 0; i < 10; i++) cache.store(cache.lookup([i, 0]));
    const kept = cache.takeEvents();
    expect(kept.length).toBeLessThanOrEqual(6);
    expect(at(kept.at(-1), "event_id")).toBe(10);
  });
});
