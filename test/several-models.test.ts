import { describe, expect, test } from "bun:test";
import type { ScheduleStyle } from "../src/config/types.ts";
import type { EmulatedWorker } from "../src/emulator/index.ts";
import { eventually, startCluster, type TestCluster } from "./support/cluster.ts";
import { fakeWorker } from "./support/fake-worker.ts";

/** Two models behind one proxy: a context and a generation worker each, and aliases for both. */
function mixedFleet(schedule: ScheduleStyle): Promise<TestCluster> {
  return startCluster({
    contexts: [{ model: "model-a" }, { model: "model-b" }],
    generations: [{ model: "model-a" }, { model: "model-b" }],
    config: {
      schedule,
      maxRetries: 0,
      modelAliases: [
        { from: "claude-sonnet-4", to: "model-b" },
        { from: "gpt-*", to: "model-a" },
      ],
    },
  });
}

type Route = "/v1/completions" | "/v1/chat/completions" | "/v1/responses" | "/v1/messages";
const ROUTES: readonly Route[] = ["/v1/completions", "/v1/chat/completions", "/v1/responses", "/v1/messages"];

function bodyFor(route: Route, model: string, stream: boolean): Record<string, unknown> {
  const prompt = "several models share one front door";
  if (route === "/v1/completions") return { model, prompt, max_tokens: 4, stream };
  if (route === "/v1/chat/completions") return { model, messages: [{ role: "user", content: prompt }], max_tokens: 4, stream };
  if (route === "/v1/responses") return { model, input: prompt, max_output_tokens: 4, stream };
  return { model, max_tokens: 4, messages: [{ role: "user", content: prompt }], stream };
}

/** Model requests (either phase) a worker has seen. */
function served(worker: EmulatedWorker): number {
  return worker.requests.filter((record) => record.phase !== "other").length;
}

function counts(cluster: TestCluster): number[] {
  return [...cluster.contexts, ...cluster.generations].map(served);
}

describe.each(["context_first", "generation_first"] as const)("a fleet of two models, %s", (schedule) => {
  test("serves each model (by name, exact alias or prefix alias) on its own workers only, on all four routes, streamed and not", async () => {
    await using cluster = await mixedFleet(schedule);
    // [context a, context b, generation a, generation b]: which workers each name must reach.
    const cases = [
      { model: "model-a", on: [1, 0, 1, 0] },
      { model: "model-b", on: [0, 1, 0, 1] },
      { model: "claude-sonnet-4", on: [0, 1, 0, 1] },
      { model: "gpt-4o-mini", on: [1, 0, 1, 0] },
    ];
    for (const route of ROUTES) {
      for (const stream of [false, true]) {
        for (const { model, on } of cases) {
          const before = counts(cluster);
          const response = await cluster.post(route, bodyFor(route, model, stream));
          const text = await response.text();
          expect({ route, stream, model, status: response.status }).toEqual({ route, stream, model, status: 200 });
          expect(text.length).toBeGreaterThan(0);
          const reached = counts(cluster).map((after, index) => Math.min(after - (before[index] ?? 0), 1));
          expect({ route, stream, model, reached }).toEqual({ route, stream, model, reached: on });
        }
      }
    }
  });

  test("refuses a model no worker serves with 404 model_not_found in the route's dialect, and no worker sees it", async () => {
    await using cluster = await mixedFleet(schedule);
    const before = counts(cluster);
    for (const route of ROUTES) {
      for (const stream of [false, true]) {
        const response = await cluster.post(route, bodyFor(route, "model-c", stream));
        expect({ route, stream, status: response.status }).toEqual({ route, stream, status: 404 });
        const body = (await response.json()) as Record<string, Record<string, unknown>>;
        if (route === "/v1/messages") {
          expect(body["type"] as unknown).toBe("error");
          expect(body["error"]?.["type"]).toBe("not_found_error");
          expect(String(body["error"]?.["message"])).toContain("model-c");
        } else {
          expect(body["error"]?.["code"]).toBe("model_not_found");
          expect(body["error"]?.["param"]).toBe("model");
          expect(String(body["error"]?.["message"])).toContain("model-c");
        }
      }
    }
    expect(counts(cluster)).toEqual(before);
  });
});

describe("the model list and readiness of a mixed fleet", () => {
  test("/v1/models lists both served models and the exact alias; /health?model= answers per model", async () => {
    await using cluster = await mixedFleet("context_first");
    const listed = (await (await fetch(`${cluster.url}/v1/models`)).json()) as { object: string; data: { id: string; object: string }[] };
    expect(listed.object).toBe("list");
    expect(listed.data.map((entry) => entry.id)).toEqual(["model-a", "model-b", "claude-sonnet-4"]);
    expect(listed.data.every((entry) => entry.object === "model")).toBe(true);
    expect((await fetch(`${cluster.url}/health?model=model-b`)).status).toBe(200);
    expect((await fetch(`${cluster.url}/health?model=gpt-5`)).status).toBe(200);
    expect((await fetch(`${cluster.url}/health?model=model-c`)).status).toBe(503);
    expect((await fetch(`${cluster.url}/health`)).status).toBe(200);
  });

  test("/cluster_info, the metrics and the dashboard show each model's ready workers and load", async () => {
    await using cluster = await mixedFleet("context_first");
    const info = (await (await fetch(`${cluster.url}/cluster_info`)).json()) as {
      models: Record<string, { is_ready: boolean; context: { ready: number; workers: number }; generation: { ready: number } }>;
      workers: { context: { url: string; models: string[] }[] };
    };
    expect(Object.keys(info.models)).toEqual(["model-a", "model-b"]);
    expect(info.models["model-a"]).toMatchObject({ is_ready: true, context: { ready: 1, workers: 1 }, generation: { ready: 1 } });
    expect(info.workers.context.map((worker) => worker.models)).toEqual([["model-a"], ["model-b"]]);
    const text = await (await fetch(`${cluster.url}/prometheus/metrics`)).text();
    expect(text).toContain('disagg_proxy_model_workers_ready{model="model-b",role="generation"} 1');
    expect(text).toContain('disagg_proxy_model_in_flight{model="model-a",role="context"} 0');
    const dashboard = (await (await fetch(`${cluster.url}/dashboard/data`)).json()) as { models: Record<string, unknown>[] };
    expect(dashboard.models).toEqual([
      { model: "model-a", contextReady: 1, contextWorkers: 1, generationReady: 1, generationWorkers: 1, inFlight: 0 },
      { model: "model-b", contextReady: 1, contextWorkers: 1, generationReady: 1, generationWorkers: 1, inFlight: 0 },
    ]);
  });
});

describe("a single-model fleet", () => {
  test("sends every request to its workers whatever `model` says, and /v1/models is the worker's own answer", async () => {
    await using cluster = await startCluster({ contexts: [{ model: "only-model" }], generations: [{ model: "only-model" }] });
    for (const model of ["only-model", "gpt-4o", "claude-opus-4"]) {
      const response = await cluster.post("/v1/chat/completions", { model, messages: [{ role: "user", content: "hi" }], max_tokens: 2 });
      expect(response.status).toBe(200);
      await response.text();
    }
    const listed = (await (await fetch(`${cluster.url}/v1/models`)).json()) as { data: { id: string; owned_by: string }[] };
    expect(listed.data.map((entry) => entry.id)).toEqual(["only-model"]);
    expect(served(cluster.contexts[0] as EmulatedWorker)).toBe(3);
  });
});

describe("a worker's model list is bounded", () => {
  test("ids past 256 characters and lists past 64 ids are not taken from a worker", async () => {
    const ids = ["x".repeat(300), ...Array.from({ length: 100 }, (_, i) => `m${i}`)];
    const hostile = fakeWorker((request) =>
      new URL(request.url).pathname === "/v1/models"
        ? Response.json({ object: "list", data: ids.map((id) => ({ id })) })
        : new Response(null, { status: 404 }),
    );
    try {
      await using cluster = await startCluster({ config: { generationServers: [`http://127.0.0.1:${hostile.port}`] } });
      const info = (await (await fetch(`${cluster.url}/cluster_info`)).json()) as { workers: { generation: { models: string[] }[] } };
      const models = info.workers.generation[0]?.models ?? [];
      expect(models).toHaveLength(64);
      expect(models.every((id) => id.length < 256)).toBe(true);
    } finally {
      await hostile.stop(true);
    }
  });
});

describe("a worker whose model list failed as it joined", () => {
  test("is asked again at its next passed health checks in a fleet of several models until its model is learnt", async () => {
    let asked = 0;
    const late = fakeWorker((request) => {
      if (new URL(request.url).pathname !== "/v1/models") return new Response(null, { status: 404 });
      asked++;
      return asked === 1 ? new Response("not yet", { status: 503 }) : Response.json({ object: "list", data: [{ id: "model-b" }] });
    });
    try {
      await using cluster = await startCluster({
        contexts: [{ model: "model-a" }, { model: "model-b" }],
        generations: [{ model: "model-a" }],
        config: { healthCheckIntervalMs: 20 },
      });
      const lateUrl = `http://127.0.0.1:${late.port}`;
      cluster.proxy.replaceWorkers(
        cluster.contexts.map((worker) => worker.url),
        [...cluster.generations.map((worker) => worker.url), lateUrl],
      );
      const modelsOf = async (): Promise<unknown> => {
        const info = (await (await fetch(`${cluster.url}/cluster_info`)).json()) as {
          workers: { generation: { url: string; models: string[] | null }[] };
        };
        return info.workers.generation.find((worker) => worker.url === lateUrl)?.models;
      };
      await eventually(async () => (await modelsOf()) !== undefined && asked >= 1, 3000, "the late worker joined");
      await eventually(async () => JSON.stringify(await modelsOf()) === '["model-b"]', 3000, "its model learnt");
      expect(asked).toBeGreaterThanOrEqual(2);
      expect(cluster.logs.some((line) => line["msg"] === "worker models learnt" && line["worker"] === lateUrl)).toBe(true);
    } finally {
      await late.stop(true);
    }
  });
});
