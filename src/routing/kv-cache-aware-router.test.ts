import { describe, expect, test } from "bun:test";
import { startEmulatedWorker, type EmulatedWorker, type EmulatorOptions } from "../emulator/index.ts";
import { Placement } from "./placement.ts";
import type { RoutingRequest } from "./routing-request.ts";

/** Emulated workers and a placement whose context router is kv_cache_aware, blocks of 8 tokens. */
function cluster(
  count: number,
  options: Partial<EmulatorOptions> = {},
): { workers: EmulatedWorker[]; placement: Placement } & AsyncDisposable {
  const workers = Array.from({ length: count }, () => startEmulatedWorker({ role: "mixed", tokensPerBlock: 8, ...options }));
  const placement = new Placement({
    contextServers: workers.map((worker) => worker.url),
    generationServers: ["http://127.0.0.1:9"],
    contextRouter: "kv_cache_aware",
    generationRouter: "round_robin",
    routerOptions: { context: { tokensPerBlock: 8, maxBatchSize: 4 }, generation: {} },
  });
  for (const worker of placement.pool.all("context")) worker.ready = true;
  const stop = async (): Promise<void> => {
    await Promise.all(workers.map((worker) => worker.stop()));
  };
  return { workers, placement, [Symbol.asyncDispose]: stop };
}

function ids(from: number, count: number): number[] {
  return Array.from({ length: count }, (_, i) => from + i);
}

function routing(promptTokenIds: readonly number[] | undefined, promptText = ""): RoutingRequest {
  return { conversationId: undefined, promptText, promptTokenIds };
}

/** Serves the prompt on the worker (aggregated completions), as the pipeline would after placing it. */
async function serve(worker: EmulatedWorker | undefined, prompt: readonly number[]): Promise<void> {
  const response = await fetch(`${worker?.url}/v1/completions`, { method: "POST", body: JSON.stringify({ prompt, max_tokens: 1 }) });
  expect(response.status).toBe(200);
  await response.text();
}

function place(placement: Placement, request: RoutingRequest, key = 1n): ReturnType<Placement["place"]> {
  return placement.place({ role: "context", requestKey: key, exclude: undefined, avoid: [], routing: request });
}

describe("kv_cache_aware router", () => {
  test("learns a worker's cached blocks from its KV events and sends the same prefix back to it", async () => {
    await using c = cluster(3);
    const prompt = ids(100, 41);
    const first = place(c.placement, routing(prompt));
    expect(first).toMatchObject({ matchedTokens: 0, totalTokens: 41 });
    const worker = c.workers.find((w) => w.url === first.worker.origin);
    await serve(worker, prompt);
    first.reservation.release();
    await c.placement.finished("context", first.worker.origin, routing(prompt), true);
    for (let i = 0; i < 3; i++) {
      const again = place(c.placement, routing([...prompt, ...ids(900, 20)]), BigInt(i));
      expect(again.worker.origin).toBe(first.worker.origin);
      // The worker cached 5 full blocks of the 40 tokens before the prompt's last one.
      expect(again).toMatchObject({ matchedTokens: 40, totalTokens: 61 });
      again.reservation.release();
    }
  });

  test("blocks the worker evicted are forgotten once its removed events are read", async () => {
    await using c = cluster(1, { kvCacheBlocks: 5 });
    const [only] = c.workers;
    const prompt = ids(100, 41);
    await serve(only, prompt);
    await c.placement.finished("context", only?.url ?? "", routing(prompt), true);
    expect(place(c.placement, routing(prompt)).matchedTokens).toBe(40);
    await serve(only, ids(5000, 41)); // five new blocks evict the first prompt's five
    await c.placement.finished("context", only?.url ?? "", routing(undefined), true);
    expect(place(c.placement, routing(prompt)).matchedTokens).toBe(0);
  });

  test("load outweighs a small cached share: the score is match share minus in-flight / max_batch_size", async () => {
    await using c = cluster(2);
    const prompt = ids(100, 41);
    const first = place(c.placement, routing(prompt));
    await serve(
      c.workers.find((w) => w.url === first.worker.origin),
      prompt,
    );
    await c.placement.finished("context", first.worker.origin, routing(prompt), true);
    // first keeps its reservation: 1/4 of load against 40/(15 blocks × 8) = 0.33 of match, still ahead.
    const long = [...prompt, ...ids(900, 80)];
    expect(place(c.placement, routing(long), 2n).worker.origin).toBe(first.worker.origin);
    // Two reservations now: 0.33 − 0.5 < 0, the idle worker wins.
    expect(place(c.placement, routing(long), 3n).worker.origin).not.toBe(first.worker.origin);
  });

  test("ties go round-robin", async () => {
    await using c = cluster(3);
    const picks = [1, 2, 3].map((i) => {
      const placed = place(c.placement, routing(ids(100 * i, 20)), BigInt(i));
      placed.reservation.release();
      return placed.worker.origin;
    });
    expect(new Set(picks).size).toBe(3);
  });

  test("without token ids it matches the text of prompts that finished successfully on the worker", async () => {
    await using c = cluster(2);
    const text = "word ".repeat(60);
    const first = place(c.placement, routing(undefined, text));
    first.reservation.release();
    await c.placement.finished("context", first.worker.origin, routing(undefined, text), true);
    const again = place(c.placement, routing(undefined, `${text}and more words after it`));
    expect(again.worker.origin).toBe(first.worker.origin);
    // 299 characters hashed in blocks of 32: 9 full blocks, counted as 8 tokens each.
    expect(again).toMatchObject({ matchedTokens: 72, totalTokens: 81 });
  });

  test("a failed request teaches nothing about its text", async () => {
    await using c = cluster(2);
    const text = "word ".repeat(60);
    const first = place(c.placement, routing(undefined, text));
    first.reservation.release();
    await c.placement.finished("context", first.worker.origin, routing(undefined, text), false);
    expect(place(c.placement, routing(undefined, text)).matchedTokens).toBe(0);
  });
});

describe("kv_cache_aware exploration", () => {
  const system = "You are a careful assistant. ".repeat(40);

  test("a worker that joins cold gets traffic although the others all match the shared system prompt", async () => {
    await using c = cluster(3);
    const [cold, ...warm] = c.placement.pool.all("context");
    cold!.ready = false;
    const run = async (from: number, count: number): Promise<Map<string, number>> => {
      const picks = new Map<string, number>();
      for (let i = from; i < from + count; i++) {
        const request = routing(undefined, `${system} question ${i}`);
        const placed = place(c.placement, request, BigInt(i));
        picks.set(placed.worker.origin, (picks.get(placed.worker.origin) ?? 0) + 1);
        placed.reservation.release();
        await c.placement.finished("context", placed.worker.origin, request, true);
      }
      return picks;
    };
    const before = await run(0, 32);
    expect([...before.keys()].toSorted()).toEqual(warm.map((w) => w.origin).toSorted());
    cold!.ready = true;
    const after = await run(100, 96);
    // Explored, then warm: it wins ties with the others once it holds the shared prefix.
    expect(after.get(cold!.origin) ?? 0).toBeGreaterThanOrEqual(96 / 3 / 2);
  });

  test("without a cold worker nothing is explored: a conversation keeps returning to its worker", async () => {
    await using c = cluster(2);
    let history = system;
    let home: string | undefined;
    for (let turn = 0; turn < 48; turn++) {
      history += ` turn ${turn} ${"words ".repeat(30)}`;
      const request = routing(undefined, history);
      const placed = place(c.placement, request, BigInt(turn));
      if (turn > 0) expect(placed.worker.origin).toBe(home!);
      home = placed.worker.origin;
      placed.reservation.release();
      // A second conversation keeps the other worker's share up, so it is never starved.
      const other = routing(undefined, `another conversation ${turn}`);
      const elsewhere = place(c.placement, other, BigInt(1000 + turn));
      elsewhere.reservation.release();
      await c.placement.finished("context", placed.worker.origin, request, true);
      await c.placement.finished("context", elsewhere.worker.origin, other, true);
    }
  });
});
