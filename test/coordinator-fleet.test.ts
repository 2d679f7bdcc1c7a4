/**
 * Issue #36's done-when, in process: three replicas in front of the same workers, a round-robin
 * client before them, with and without one `disagg-proxy coordinator`.
 */

import { describe, expect, test } from "bun:test";
import { systemPrompt, turnBody, userMessage, type ChatMessage, type ConversationShape } from "../bench/load/conversation-script.ts";
import { contextPrefill, startReplicaSet, type ReplicaSet } from "./support/replicas.ts";
import { eventually } from "./support/wait.ts";

const SHAPE: ConversationShape = { systemTokens: 64, userTokens: 48, replyTokens: 4 };
const CONVERSATION_ROUTERS = { contextRouter: "conversation", generationRouter: "conversation" } as const;

/** `conversations` conversations of `turns` turns, `users` at a time; every turn must answer 200. */
async function playConversations(set: ReplicaSet, conversations: number, turns: number, users: number): Promise<void> {
  let next = 0;
  const user = async (): Promise<void> => {
    for (let conversation = next++; conversation < conversations; conversation = next++) {
      const history: ChatMessage[] = [systemPrompt(SHAPE)];
      for (let turn = 0; turn < turns; turn++) {
        history.push(userMessage(SHAPE, conversation, turn));
        // oxlint-disable-next-line no-await-in-loop -- each turn carries the one before
        const response = await set.post("/v1/chat/completions", turnBody(SHAPE, `conversation-${conversation}`, history));
        // oxlint-disable-next-line no-await-in-loop -- read to its end before the next turn
        const text = await response.text();
        expect(response.status).toBe(200);
        expect(text).toContain("[DONE]");
        history.push({ role: "assistant", content: "fine thanks" });
      }
    }
  };
  await Promise.all(Array.from({ length: users }, user));
}

async function hitRatio(replicas: number, coordinator: boolean): Promise<number> {
  await using set = await startReplicaSet({
    replicas,
    contexts: 3,
    generations: 2,
    coordinator,
    worker: { tokensPerBlock: 16 },
    config: { ...CONVERSATION_ROUTERS, routerOptions: { context: { tokensPerBlock: 16 }, generation: { tokensPerBlock: 16 } } },
  });
  await playConversations(set, 12, 6, 4);
  const { promptTokens, cachedTokens } = await contextPrefill(set.contexts);
  return cachedTokens / promptTokens;
}

function saysBack(records: readonly Record<string, unknown>[]): boolean {
  return records.some((line) => String(line["msg"]).startsWith("coordinator answers again"));
}

describe("a serving process and the coordinator, as upstream's e2e test wires them", () => {
  // test_coordinator_e2e.py @ 2713ff6b ::test_disagg_completion_e2e_through_coordinator: a round_robin
  // context router placed locally, a conversation generation router delegated, X-Session-ID as the conversation.
  test("a completion round-trips context (local) -> coordinator /select -> generation", async () => {
    await using set = await startReplicaSet({
      replicas: 1,
      contexts: 1,
      generations: 2,
      coordinator: true,
      config: { contextRouter: "round_robin", generationRouter: "conversation" },
    });
    const [replica] = set.replicas;
    if (replica === undefined) throw new Error("replica");
    for (let i = 0; i < 3; i++) {
      const response = await fetch(`${replica.url.origin}/v1/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-session-id": "conv-e2e" },
        body: JSON.stringify({ model: "emulated-model", prompt: "hello", max_tokens: 8 }),
      });
      expect(response.status).toBe(200);
      expect(((await response.json()) as { choices: { finish_reason: string }[] }).choices[0]?.finish_reason).toBeDefined();
    }
    const lines = (): Record<string, unknown>[] => set.logs[0]?.filter((line) => line["msg"] === "request") ?? [];
    await eventually(() => lines().length === 3);
    expect(lines().map((line) => line["placed_by"])).toEqual(Array(3).fill("context:local generation:coordinator"));
    // Sticky by the session: every generation leg on one worker.
    const served = set.generations.map((worker) => worker.requests.filter((r) => r.phase === "generation").length);
    expect(served.toSorted((a, b) => a - b)).toEqual([0, 3]);
  });
});

describe("three replicas and one coordinator", () => {
  test("place a multi-turn workload with one proxy's cache hit ratio (within 2 %); without the coordinator it is measurably worse", async () => {
    const one = await hitRatio(1, false);
    const coordinated = await hitRatio(3, true);
    const apart = await hitRatio(3, false);
    expect(Math.abs(coordinated - one)).toBeLessThanOrEqual(0.02);
    expect(apart).toBeLessThan(one - 0.1);
  }, 30_000);

  test("per-worker limits hold exactly across replicas: 1,000 requests, no worker ever ran more than its limit", async () => {
    const limit = 2;
    await using set = await startReplicaSet({
      replicas: 3,
      contexts: 2,
      generations: 2,
      coordinator: true,
      worker: { prefillMs: 2, tokenMs: 1 },
      config: { ...CONVERSATION_ROUTERS, maxInflightPerWorker: limit },
    });
    const statuses = new Map<number, number>();
    let sent = 0;
    const client = async (): Promise<void> => {
      while (sent < 1000) {
        sent++;
        // oxlint-disable-next-line no-await-in-loop -- a closed loop per client
        const response = await set.post("/v1/chat/completions", {
          model: "emulated-model",
          messages: [{ role: "user", content: `q ${sent}` }],
          max_tokens: 3,
        });
        // oxlint-disable-next-line no-await-in-loop -- read before the next
        await response.text();
        statuses.set(response.status, (statuses.get(response.status) ?? 0) + 1);
      }
    };
    await Promise.all(Array.from({ length: 8 }, client));
    const peaks = [...set.contexts, ...set.generations].map((worker) => worker.peakRunning());
    expect([...statuses.keys()].toSorted((a, b) => a - b)).toEqual([200, 429]);
    expect((statuses.get(200) ?? 0) + (statuses.get(429) ?? 0)).toBe(1000);
    expect(Math.max(...peaks)).toBe(limit);
    // Every placement was the coordinator's, and each was finished.
    const lines = set.logs.flatMap((records) => records.filter((line) => line["msg"] === "request" && line["status"] === 200));
    expect(lines.every((line) => line["placed_by"] === "coordinator")).toBe(true);
    await eventually(() => set.coordinator?.service.leases === 0, 3000, "every lease finished");
  }, 30_000);

  test("killing the coordinator mid-load costs no client error; the replicas place locally, then return to it", async () => {
    await using set = await startReplicaSet({
      replicas: 3,
      contexts: 2,
      generations: 2,
      coordinator: true,
      worker: { prefillMs: 1, tokenMs: 1 },
      config: CONVERSATION_ROUTERS,
    });
    const failures: number[] = [];
    let answered = 0;
    const load = { stop: false };
    const client = async (id: number): Promise<void> => {
      for (let i = 0; !load.stop; i++) {
        // oxlint-disable-next-line no-await-in-loop -- a closed loop per client
        const response = await set.post("/v1/chat/completions", turnBody(SHAPE, `kill-${id}-${i % 3}`, [userMessage(SHAPE, id, i)]));
        // oxlint-disable-next-line no-await-in-loop -- read before the next
        await response.text();
        if (response.status === 200) answered++;
        else failures.push(response.status);
      }
    };
    const clients = Array.from({ length: 8 }, (_, id) => client(id));
    await eventually(() => answered >= 50, 10_000, "load through the coordinator");
    await set.coordinator?.stop();
    const atKill = answered;
    await eventually(() => answered >= atKill + 50, 10_000, "load on the local routers");
    await set.restartCoordinator();
    await eventually(() => set.logs.every(saysBack), 5000, "every replica back on the coordinator");
    const atReturn = answered;
    await eventually(() => answered >= atReturn + 50, 10_000, "load through the restarted coordinator");
    load.stop = true;
    await Promise.all(clients);
    expect(failures).toEqual([]);
    const warnings = set.logs.map((records) => records.filter((line) => String(line["msg"]).startsWith("coordinator unreachable")).length);
    expect(warnings).toEqual([1, 1, 1]);
    const placedBy = set.logs.flatMap((records) => records.filter((line) => line["msg"] === "request").map((line) => line["placed_by"]));
    expect(placedBy).toContain("local");
    expect(placedBy.at(-1)).toBe("coordinator");
  }, 40_000);
});
