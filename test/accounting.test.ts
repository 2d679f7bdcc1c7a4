import { describe, expect, test } from "bun:test";
import { eventually, startCluster, type TestCluster } from "./support/cluster.ts";

/**
 * A small deterministic generator, one per lane (seed + lane number), so each lane's requests
 * are the same whatever order the lanes interleave in, and a failing mix can be replayed with
 * ACCOUNTING_SEED=<the seed the failure prints>.
 */
function random(seed: number): () => number {
  let state = seed >>> 0;
  return () => {
    state = (state * 1664525 + 1013904223) >>> 0;
    return state / 2 ** 32;
  };
}

const FAULTS = [
  "",
  "",
  "",
  "[[emu ctx.reject=503]]",
  "[[emu ctx.reject=400]]",
  "[[emu gen.reject=500]]",
  "[[emu gen.cut=2]]",
  "[[emu gen.error_event=1]]",
  "[[emu ctx.prefill_ms=80]]",
];

async function oneRequest(url: string, rand: () => number): Promise<void> {
  const stream = rand() < 0.5;
  const fault = FAULTS[Math.floor(rand() * FAULTS.length)] ?? "";
  const client = new AbortController();
  const leaveAfter = rand() < 0.25 ? Math.floor(rand() * 60) : undefined;
  const timer = leaveAfter === undefined ? undefined : setTimeout(() => client.abort(), leaveAfter);
  try {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: `mix ${fault}` }], max_tokens: 5, stream }),
      signal: client.signal,
    });
    await response.arrayBuffer();
  } catch {
    // The client left: that is part of the mix.
  } finally {
    clearTimeout(timer);
  }
}

describe.each(["context_first", "generation_first"] as const)("%s", (schedule) => {
  test("after 250 mixed requests with failures and disconnects every count is back at zero", async () => {
    await using cluster = await startCluster({
      contexts: [{ tokenMs: 2 }, { tokenMs: 2 }],
      generations: [{ tokenMs: 2 }, { tokenMs: 2 }],
      config: {
        schedule,
        contextRouter: "load_balancing",
        generationRouter: "load_balancing",
        streamStartWaitMs: 30,
        keepaliveIntervalMs: 20,
      },
    });
    const seed = Number(process.env["ACCOUNTING_SEED"] ?? (schedule === "context_first" ? 7 : 11));
    const lanes = Array.from({ length: 16 }, async (_, lane) => {
      const rand = random(seed + lane);
      for (let i = 0; i < 16; i++) await oneRequest(cluster.url, rand);
    });
    await Promise.all(lanes);
    await replayable(seed, () => countsBackAtZero(cluster));
  }, 30_000);
});

/** Runs the checks; a failure names the seed that replays the mix. */
async function replayable(seed: number, checks: () => Promise<void>): Promise<void> {
  try {
    await checks();
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    throw new Error(`replay this mix with ACCOUNTING_SEED=${seed}\n${message}`, { cause: error });
  }
}

async function countsBackAtZero(cluster: TestCluster): Promise<void> {
  const table = cluster.proxy.app.placement.table;
  await eventually(() => table.active() === 0, 5000);
  expect(table.snapshot()).toEqual({});
  const workers = [...cluster.contexts, ...cluster.generations];
  await eventually(() => workers.every((w) => w.running() === 0), 5000);
  const ended = cluster.logs.filter((l) => l["msg"] === "request");
  expect(ended.length).toBeGreaterThanOrEqual(250);
  const outcomes = new Set(ended.map((l) => l["outcome"]));
  expect(outcomes.has("ok")).toBe(true);
  expect(outcomes.has("worker_error")).toBe(true);
  expect(outcomes.has("client_disconnected")).toBe(true);
}
