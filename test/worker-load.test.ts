import { describe, expect, test } from "bun:test";
import type { EmulatedWorker } from "../src/emulator/index.ts";
import { eventually, startCluster, type TestCluster } from "./support/cluster.ts";
import { fakeWorker } from "./support/fake-worker.ts";

const CHAT = { model: "m", messages: [{ role: "user", content: "how busy are you" }], max_tokens: 2 };

function served(worker: EmulatedWorker | undefined): number {
  return worker?.requests.filter((record) => record.phase !== "other").length ?? 0;
}

/** Until the proxy holds a fresh report from every generation worker. */
async function reportsIn(cluster: TestCluster): Promise<void> {
  const loads = cluster.proxy.app.placement.loads;
  await eventually(() => cluster.generations.every((worker) => loads?.report(worker.url) !== undefined), 3000, "load reports");
}

async function sendChats(cluster: TestCluster, count: number): Promise<void> {
  for (let sent = 0; sent < count; sent++) {
    const response = await cluster.post("/v1/chat/completions", CHAT);
    expect(response.status).toBe(200);
    await response.text();
  }
}

describe("worker-reported load", () => {
  test("load_balancing keeps new requests off a worker reporting a deep queue; without reports it shares them", async () => {
    const generations = [{ reportedWaiting: 50 }, {}];
    {
      await using cluster = await startCluster({ generations, config: { generationRouter: "load_balancing", workerLoadIntervalMs: 20 } });
      await reportsIn(cluster);
      await sendChats(cluster, 6);
      expect([served(cluster.generations[0]), served(cluster.generations[1])]).toEqual([0, 6]);
      const info = (await (await fetch(`${cluster.url}/cluster_info`)).json()) as {
        workers: { generation: { load: number; reported: { waiting: number } }[] };
      };
      expect(info.workers.generation[0]).toMatchObject({ load: 50, reported: { waiting: 50 } });
    }
    {
      await using cluster = await startCluster({ generations, config: { generationRouter: "load_balancing" } });
      await sendChats(cluster, 6);
      expect([served(cluster.generations[0]), served(cluster.generations[1])]).toEqual([3, 3]);
    }
  });

  test("kv_cache_aware's load term uses the reports: the idle worker wins the tie", async () => {
    await using cluster = await startCluster({
      generations: [{ reportedWaiting: 40 }, {}],
      config: { generationRouter: "kv_cache_aware", workerLoadIntervalMs: 20 },
    });
    await reportsIn(cluster);
    await sendChats(cluster, 4);
    expect(served(cluster.generations[0])).toBe(0);
  });

  test("--max-worker-queue refuses with 429 and Retry-After (Anthropic: 529 overloaded_error) when every worker of a role is over it, before any leg", async () => {
    await using cluster = await startCluster({
      generations: [{ reportedWaiting: 30 }, { reportedWaiting: 12 }],
      config: { workerLoadIntervalMs: 20, maxWorkerQueue: 10 },
    });
    await reportsIn(cluster);
    const chat = await cluster.post("/v1/chat/completions", CHAT);
    expect(chat.status).toBe(429);
    expect(chat.headers.get("retry-after")).toBe("5");
    await chat.text();
    const messages = await cluster.post("/v1/messages", {
      model: "m",
      max_tokens: 2,
      messages: [{ role: "user", content: "hi" }],
      stream: true,
    });
    expect(messages.status).toBe(529);
    expect(messages.headers.get("retry-after")).toBe("5");
    expect(((await messages.json()) as { error: { type: string } }).error.type).toBe("overloaded_error");
    expect(served(cluster.contexts[0]) + served(cluster.generations[0]) + served(cluster.generations[1])).toBe(0);
  });

  test("a worker that reports no load is counted by the proxy alone, and said so once", async () => {
    let polls = 0;
    const silent = fakeWorker((request) => {
      if (new URL(request.url).pathname === "/prometheus/metrics") polls++;
      return new Response("not found", { status: 404 });
    });
    try {
      await using cluster = await startCluster({
        config: { generationServers: [`http://127.0.0.1:${silent.port}`], workerLoadIntervalMs: 10 },
      });
      await eventually(() => polls >= 4, 3000, "several polls");
      const told = cluster.logs.filter((line) => String(line["msg"]).startsWith("worker reports no load"));
      expect(told).toHaveLength(1);
      expect(cluster.proxy.app.placement.loads?.load("generation", `http://127.0.0.1:${silent.port}`)).toBe(0);
    } finally {
      await silent.stop(true);
    }
  });
});
