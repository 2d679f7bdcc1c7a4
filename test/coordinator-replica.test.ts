import { describe, expect, test } from "bun:test";
import type { MsgpackMap } from "../src/json/msgpack-read.ts";
import { startCluster, type TestCluster } from "./support/cluster.ts";
import { startStandInCoordinator, type StandInCoordinator } from "./support/stand-in-coordinator.ts";
import { eventually } from "./support/wait.ts";

const hostOf = (url: string): string => new URL(url).host;

function chat(conversation: string, content = "hello", stream = false): Record<string, unknown> {
  return {
    model: "emulated-model",
    messages: [{ role: "user", content }],
    max_tokens: 4,
    stream,
    conversation_params: { conversation_id: conversation },
  };
}

/** `role req_id` of a select or finish body. */
function legKey(body: MsgpackMap): string {
  return `${typeof body["role"] === "string" ? body["role"] : "?"} ${typeof body["req_id"] === "bigint" ? body["req_id"] : "?"}`;
}

/** Per (role, req_id): the placements the coordinator made against the finishes it got; `unmatched` keys differ. */
function finishesPerSelect(coordinator: StandInCoordinator): { selects: number; finishes: number; unmatched: number } {
  const key = legKey;
  const count = new Map<string, number>();
  for (const body of coordinator.selects) count.set(key(body), (count.get(key(body)) ?? 0) + 1);
  for (const body of coordinator.finishes) count.set(key(body), (count.get(key(body)) ?? 0) - 1);
  const unmatched = [...count.values()].filter((left) => left !== 0).length;
  return { selects: coordinator.selects.length, finishes: coordinator.finishes.length, unmatched };
}

function requestLines(cluster: TestCluster): Record<string, unknown>[] {
  return cluster.logs.filter((line) => line["msg"] === "request");
}

async function clusterBehind(
  coordinator: StandInCoordinator,
  router: "conversation" | "kv_cache_aware" | "round_robin" = "conversation",
  schedule: "context_first" | "generation_first" = "context_first",
): Promise<TestCluster> {
  return startCluster({
    contexts: [{}, {}],
    generations: [{}, {}],
    config: { disaggCoordinatorUrl: coordinator.url, coordinatorTimeoutMs: 200, contextRouter: router, generationRouter: router, schedule },
  });
}

describe("a replica with disagg_coordinator_url", () => {
  test("sends each stateful leg where the coordinator places it, finishes every placed leg once, and logs placed_by", async () => {
    await using coordinator = startStandInCoordinator([]);
    await using cluster = await clusterBehind(coordinator);
    const [, context] = cluster.contexts;
    const [, generation] = cluster.generations;
    if (context === undefined || generation === undefined) throw new Error("two workers per role");
    coordinator.answer = (body) => ({ server: hostOf(body["role"] === "context" ? context.url : generation.url) });
    for (const stream of [false, true]) {
      const response = await cluster.post("/v1/chat/completions", chat("conv-a", "hello", stream));
      expect(response.status).toBe(200);
      await response.text();
    }
    expect(context.requests.filter((r) => r.phase === "context")).toHaveLength(2);
    expect(generation.requests.filter((r) => r.phase === "generation")).toHaveLength(2);
    const [select] = coordinator.selects;
    // Upstream's body: the conversation id as routing_key, the request's disagg id as req_id; the
    // generation leg excludes the context worker (a URL in both lists is never paired with itself).
    expect(select?.["routing_key"]).toBe("conv-a");
    expect(typeof select?.["req_id"]).toBe("bigint");
    expect(coordinator.selects[1]?.["exclude_server"]).toBe(hostOf(context.url));
    await eventually(() => coordinator.finishes.length === 4, 2000, "four finishes");
    expect(finishesPerSelect(coordinator)).toEqual({ selects: 4, finishes: 4, unmatched: 0 });
    expect(coordinator.finishes.every((body) => body["success"] === true)).toBe(true);
    await eventually(() => requestLines(cluster).length === 2);
    expect(requestLines(cluster).map((line) => line["placed_by"])).toEqual(["coordinator", "coordinator"]);
    expect(requestLines(cluster).every((line) => typeof line["placement_us"] === "number")).toBe(true);
  });

  test("a failed leg and a client that leaves mid-stream are finished once each, as failed", async () => {
    await using coordinator = startStandInCoordinator([]);
    await using cluster = await clusterBehind(coordinator);
    const [context] = cluster.contexts;
    const [generation] = cluster.generations;
    if (context === undefined || generation === undefined) throw new Error("workers");
    coordinator.answer = (body) => ({ server: hostOf(body["role"] === "context" ? context.url : generation.url) });
    // The context worker refuses: the leg fails (and is retried, placed again, finished again).
    const refused = await cluster.post("/v1/chat/completions", chat("conv-b", "[[emu ctx.reject=500]]"));
    expect(refused.status).toBe(500);
    await refused.text();
    // The client leaves while the generation worker streams slowly.
    const leaving = new AbortController();
    const streamed = await cluster.post("/v1/chat/completions", chat("conv-c", "[[emu gen.token_ms=200 tokens=50]]", true), {
      signal: leaving.signal,
    });
    expect(streamed.status).toBe(200);
    await generation.waitFor((r) => r.phase === "generation");
    leaving.abort();
    await eventually(
      () => finishesPerSelect(coordinator).unmatched === 0 && coordinator.selects.length >= 4,
      3000,
      "a finish per placed leg",
    );
    // A retried leg is placed again under the same req_id only after its first placement's finish arrived.
    const [firstFinish, secondSelect] = [coordinator.finishes[0], coordinator.selects[1]];
    expect(firstFinish?.["req_id"]).toBe(secondSelect?.["req_id"]);
    const outcomes = coordinator.finishes.map((body) => `${legKey(body).split(" ")[0]}:${body["success"] === true}`);
    expect(outcomes.filter((o) => o === "context:false").length).toBe(
      coordinator.selects.filter((b) => b["role"] === "context").length - 1,
    );
    expect(outcomes).toContain("generation:false");
    await eventually(() => cluster.contexts.every((w) => w.running() === 0) && cluster.generations.every((w) => w.running() === 0));
  });

  for (const [schedule, fault] of [
    ["context_first", "[[emu gen.reject=500]]"],
    ["generation_first", "[[emu gen.reject=500]]"],
  ] as const) {
    test(`${schedule} ${fault}: a request restarted on a fresh pair never places a leg the coordinator still holds under the same req_id`, async () => {
      await using coordinator = startStandInCoordinator([]);
      await using cluster = await clusterBehind(coordinator, "conversation", schedule);
      const [context] = cluster.contexts;
      const [generation] = cluster.generations;
      if (context === undefined || generation === undefined) throw new Error("workers");
      coordinator.answer = (body) => ({ server: hostOf(body["role"] === "context" ? context.url : generation.url) });
      // The generation worker refuses before any byte: the request restarts on a fresh pair, the first hand-off is settled.
      const failed = await cluster.post("/v1/chat/completions", chat("conv-r", fault));
      expect(failed.status).toBeGreaterThanOrEqual(500);
      await failed.text();
      await eventually(
        () => finishesPerSelect(coordinator).unmatched === 0 && coordinator.selects.length >= 4,
        3000,
        "a finish per placed leg",
      );
      await eventually(() => cluster.contexts.every((w) => w.running() === 0) && cluster.generations.every((w) => w.running() === 0));
      expect(coordinator.selectsWhileHeld).toEqual([]);
      expect(finishesPerSelect(coordinator).unmatched).toBe(0);
      // The restart's legs go under the restart's id: the first run's may still be held under the request's (a followed attempt).
      const contextIds = coordinator.selects.filter((body) => body["role"] === "context").map((body) => body["req_id"]);
      expect(contextIds.length).toBe(2);
      expect(contextIds[1]).not.toBe(contextIds[0]);
    });
  }

  test("a generation the proxy follows after its client left stays placed at the coordinator until the worker ends it", async () => {
    await using coordinator = startStandInCoordinator([]);
    await using cluster = await clusterBehind(coordinator);
    const [context] = cluster.contexts;
    const [generation] = cluster.generations;
    if (context === undefined || generation === undefined) throw new Error("workers");
    coordinator.answer = (body) => ({ server: hostOf(body["role"] === "context" ? context.url : generation.url) });
    const runningAtFinish: number[] = [];
    coordinator.onFinish = (body) => {
      if (body["role"] === "generation") runningAtFinish.push(generation.running());
    };
    const leaving = new AbortController();
    const pending = cluster.post("/v1/chat/completions", chat("conv-d", "[[emu gen.token_ms=40 tokens=10]]"), { signal: leaving.signal });
    await generation.waitFor((r) => r.phase === "generation");
    leaving.abort();
    await pending.catch(() => undefined);
    await eventually(() => runningAtFinish.length === 1, 3000, "the generation leg's finish");
    expect(runningAtFinish).toEqual([0]);
    expect(coordinator.finishes.find((body) => body["role"] === "generation")?.["success"]).toBe(false);
  });

  test("kv_cache_aware keys are hashed in the coordinator's block size, read from its /cluster_info at start", async () => {
    await using coordinator = startStandInCoordinator([]);
    coordinator.clusterInfo = {
      is_ready: true,
      server_lists: { context: [], generation: [] },
      routing_key_configs: { context: { tokens_per_block: 64n, kv_cache_hash_algo: "v1_block_key" } },
    };
    await using kv = await clusterBehind(coordinator, "kv_cache_aware");
    coordinator.answer = (body) => ({ server: hostOf((body["role"] === "context" ? kv.contexts[0] : kv.generations[0])?.url ?? "") });
    // The replica's own block size is 32 tokens (128 characters of text); the coordinator's 64.
    await eventually(
      async () => {
        const response = await kv.post("/v1/completions", { model: "emulated-model", prompt: "word ".repeat(256), max_tokens: 2 });
        await response.text();
        const key = coordinator.selects.findLast((body) => body["role"] === "context")?.["routing_key"];
        const chains =
          typeof key === "object" && key !== null && "block_hashes_by_algo" in key
            ? Object.values(key["block_hashes_by_algo"] as object)
            : [];
        return (chains[0] as unknown[][] | undefined)?.[0]?.length === 5;
      },
      3000,
      "keys of 64-token blocks",
    );
  });

  test("while the coordinator is unreachable it places on its own routers with one warning, and returns to it once it answers", async () => {
    const first = startStandInCoordinator([]);
    const port = first.port;
    await using cluster = await clusterBehind(first);
    await first.stop();
    for (let i = 0; i < 4; i++) {
      const response = await cluster.post("/v1/chat/completions", chat(`conv-${i}`));
      expect(response.status).toBe(200);
      await response.text();
    }
    const warnings = (): Record<string, unknown>[] =>
      cluster.logs.filter((line) => String(line["msg"]).startsWith("coordinator unreachable"));
    expect(warnings()).toHaveLength(1);
    await eventually(() => requestLines(cluster).length === 4);
    expect(requestLines(cluster).map((line) => line["placed_by"])).toEqual(Array(4).fill("local"));
    await using back = startStandInCoordinator([hostOf(cluster.contexts[0]?.url ?? "")], port);
    back.answer = (body) => ({ server: hostOf((body["role"] === "context" ? cluster.contexts[0] : cluster.generations[0])?.url ?? "") });
    await eventually(
      () => cluster.logs.some((line) => String(line["msg"]).startsWith("coordinator answers again")),
      3000,
      "the coordinator is back",
    );
    const response = await cluster.post("/v1/chat/completions", chat("conv-back"));
    expect(response.status).toBe(200);
    await response.text();
    await eventually(() => requestLines(cluster).length === 5);
    expect(requestLines(cluster).at(-1)?.["placed_by"]).toBe("coordinator");
    expect(back.selects).toHaveLength(2);
    expect(warnings()).toHaveLength(1);
  });

  test("round_robin legs never reach the coordinator; a delegating kv_cache_aware replica never reads /kv_cache_events", async () => {
    await using coordinator = startStandInCoordinator([]);
    await using roundRobin = await clusterBehind(coordinator, "round_robin");
    const response = await roundRobin.post("/v1/chat/completions", chat("conv-rr"));
    expect(response.status).toBe(200);
    await response.text();
    expect(coordinator.selects).toHaveLength(0);
    await eventually(() => requestLines(roundRobin).length === 1);
    expect(requestLines(roundRobin)[0]?.["placed_by"]).toBe("local");

    await using kv = await clusterBehind(coordinator, "kv_cache_aware");
    coordinator.answer = (body) => ({ server: hostOf((body["role"] === "context" ? kv.contexts[0] : kv.generations[0])?.url ?? "") });
    for (let i = 0; i < 3; i++) {
      const answer = await kv.post("/v1/chat/completions", chat(`conv-kv-${i}`));
      expect(answer.status).toBe(200);
      await answer.text();
    }
    const [key] = coordinator.selects;
    expect(key?.["routing_key"]).toMatchObject({ conversation_id: "conv-kv-0" });
    await eventually(() => coordinator.finishes.length === 6);
    const polls = [...kv.contexts, ...kv.generations].flatMap((worker) => worker.requests.filter((r) => r.path === "/kv_cache_events"));
    expect(polls).toHaveLength(0);
  });
});
