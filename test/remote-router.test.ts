/**
 * `router.type: remote_http` (upstream's RemoteHttpRouter, tensorrt_llm/serve/router.py
 * read_file id 56124310390) against a stand-in for upstream's router HTTP server: each
 * placement POSTs the request body, plus `exclude_server`, to `/get_next_server`, and takes
 * `{server, matched_blocks, route_hint}` from the answer.
 */

import { afterEach, describe, expect, test } from "bun:test";
import type { RouterOptions } from "../src/config/types.ts";
import type { EmulatedWorker, RecordedRequest } from "../src/emulator/index.ts";
import { isJsonObject, type JsonObject } from "../src/json/json.ts";
import { startCluster, type TestCluster, type WorkerSpec } from "./support/cluster.ts";

const chat = (content: string, stream = false) => ({
  model: "emulated-model",
  messages: [{ role: "user", content }],
  max_tokens: 3,
  stream,
});

interface StandIn {
  readonly url: string;
  readonly asked: JsonObject[];
  /** How it answers a placement (set per test; `workers` are the cluster's context workers as host:port). */
  answer: (body: JsonObject, asked: number) => Response | Promise<Response>;
  /** Stops it at once: its connections are closed. */
  stop(): void;
}

/** A stand-in for upstream's router HTTP server: it records every placement and answers as the test says. */
function standIn(): StandIn {
  const asked: JsonObject[] = [];
  const state: StandIn = {
    url: "",
    asked,
    answer: () => new Response("no answer set", { status: 500 }),
    stop: () => void server.stop(true),
  };
  const server = Bun.serve({
    port: 0,
    hostname: "127.0.0.1",
    async fetch(request) {
      if (new URL(request.url).pathname !== "/get_next_server" || request.method !== "POST")
        return new Response("not found", { status: 404 });
      const body = (await request.json()) as JsonObject;
      asked.push(body);
      return state.answer(body, asked.length);
    },
  });
  return Object.assign(state, { url: `http://127.0.0.1:${server.port}` });
}

const hostPort = (url: string): string => url.replace("http://", "");

/** What a test started, stopped after it. */
const started: { router: StandIn | undefined; cluster: TestCluster | undefined } = { router: undefined, cluster: undefined };

afterEach(async () => {
  await started.cluster?.[Symbol.asyncDispose]();
  started.router?.stop();
  started.cluster = undefined;
  started.router = undefined;
});

async function remoteCluster(
  options: { contexts?: WorkerSpec[]; context?: RouterOptions; generation?: boolean } = {},
): Promise<{ router: StandIn; cluster: TestCluster }> {
  const router = standIn();
  started.router = router;
  const routerOptions = {
    context: { remoteUrl: router.url, ...options.context },
    generation: options.generation === true ? { remoteUrl: router.url } : {},
  };
  const cluster = await startCluster({
    contexts: options.contexts ?? [{}, {}],
    config: {
      contextRouter: "remote_http",
      generationRouter: options.generation === true ? "remote_http" : "round_robin",
      routerOptions,
      maxRetries: 1,
    },
  });
  started.cluster = cluster;
  started.cluster = cluster;
  return { router, cluster };
}

/** The model requests a worker served (its health checks left out). */
function modelRequests(worker: EmulatedWorker): RecordedRequest[] {
  return worker.requests.filter((r) => r.phase !== "other");
}

/** disaggregated_params of each model request a worker served. */
function paramsOf(worker: EmulatedWorker): JsonObject[] {
  return modelRequests(worker).map((r) =>
    isJsonObject(r.body) && isJsonObject(r.body["disaggregated_params"]) ? r.body["disaggregated_params"] : {},
  );
}

describe("remote_http: placement by upstream's router HTTP server", () => {
  test("the server receives every placement with the client's body, and its dp_rank reaches the context request's disaggregated_params", async () => {
    const { router, cluster } = await remoteCluster();
    const workers = cluster.contexts.map((w) => hostPort(w.url));
    router.answer = (_body, n) =>
      Response.json({ server: workers[n % 2], matched_blocks: 2, route_hint: { dp_rank: n % 2 === 0 ? 3 : 1 } });
    const answers = await Promise.all([
      cluster.post("/v1/chat/completions", chat("one")),
      cluster.post("/v1/chat/completions", chat("two", true)),
      cluster.post("/v1/completions", { model: "emulated-model", prompt: "three", max_tokens: 2 }),
      cluster.post("/v1/responses", { model: "emulated-model", input: "four", max_output_tokens: 2 }),
    ]);
    for (const answer of answers) expect(answer.status).toBe(200);
    await Promise.all(answers.map((answer) => answer.text()));
    expect(router.asked).toHaveLength(4);
    const contents = router.asked.map((body) => JSON.stringify(body["messages"] ?? body["prompt"] ?? body["input"]));
    expect(contents.toSorted()).toEqual(['"four"', '"three"', '[{"role":"user","content":"one"}]', '[{"role":"user","content":"two"}]']);
    // A first placement has no paired worker yet: nothing to exclude.
    expect(router.asked.every((body) => body["exclude_server"] === undefined && body["model"] === "emulated-model")).toBe(true);
    // Asked for the 2nd and 4th placements the server named the first worker with rank 3, else the second with rank 1.
    const [first, second] = cluster.contexts;
    expect(paramsOf(first!).map((p) => [p["request_type"], p["route_hint"]])).toEqual([
      ["context_only", { dp_rank: 3 }],
      ["context_only", { dp_rank: 3 }],
    ]);
    expect(paramsOf(second!).map((p) => p["route_hint"])).toEqual([{ dp_rank: 1 }, { dp_rank: 1 }]);
    // The generation legs were placed by their own router and carry no hint.
    expect(paramsOf(cluster.generations[0]!).every((p) => p["route_hint"] === undefined && p["request_type"] === "generation_only")).toBe(
      true,
    );
  });

  test("a retried context leg tells the server the worker it failed on as exclude_server; a generation placement excludes its context worker", async () => {
    const { router, cluster } = await remoteCluster({ contexts: [{ faults: { rejectStatus: 500 } }, {}], generation: true });
    const [failing, healthy] = cluster.contexts.map((w) => hostPort(w.url));
    const generation = hostPort(cluster.generations[0]!.url);
    router.answer = (body) => {
      if (body["disaggregated_params"] === undefined && body["exclude_server"] === undefined) return Response.json({ server: failing });
      if (body["exclude_server"] === failing) return Response.json({ server: healthy });
      return Response.json({ server: generation, matched_blocks: 0 });
    };
    const response = await cluster.post("/v1/chat/completions", chat("retry me"));
    expect(response.status).toBe(200);
    expect(router.asked.map((body) => body["exclude_server"] ?? null)).toEqual([null, failing!, healthy!]);
    expect(cluster.contexts.map((w) => modelRequests(w).length)).toEqual([1, 1]);
    expect(modelRequests(cluster.generations[0]!)).toHaveLength(1);
  });

  test("one-shot calls (GET /v1/models, count_tokens) are no placement: the server is not asked", async () => {
    const { router, cluster } = await remoteCluster();
    expect((await fetch(`${cluster.url}/v1/models`)).status).toBe(200);
    const count = await cluster.post("/v1/messages/count_tokens", { model: "emulated-model", messages: [{ role: "user", content: "hi" }] });
    expect(count.status).toBe(200);
    expect(router.asked).toEqual([]);
  });
});

describe("remote_http: a router server that fails", () => {
  const failures: [string, RouterOptions | undefined, (standIn: StandIn, cluster: TestCluster) => void, string][] = [
    [
      "answers an error status",
      undefined,
      (s) => (s.answer = () => new Response("No available servers", { status: 503 })),
      "it answered 503",
    ],
    [
      "does not answer within request_timeout_s",
      { requestTimeoutMs: 150 },
      (s) => (s.answer = () => new Promise<Response>(() => {})),
      "it did not answer within 150 ms",
    ],
    ["names no server", undefined, (s) => (s.answer = () => Response.json({ matched_blocks: 0 })), "its answer names no server"],
    [
      "names a server that is no worker of this proxy",
      undefined,
      (s) => (s.answer = () => Response.json({ server: "10.9.9.9:1" })),
      "it chose a server that is no context worker this leg can use",
    ],
    [
      "answers a route hint that is no rank",
      undefined,
      (s, c) => (s.answer = () => Response.json({ server: hostPort(c.contexts[0]!.url), route_hint: { dp_rank: -1 } })),
      "its route_hint.dp_rank is not a rank",
    ],
  ];
  for (const [what, options, behave, reason] of failures) {
    test(`one that ${what} fails the request with a 503 saying so; no worker is asked; the log names the server`, async () => {
      const { router, cluster } = await remoteCluster(options === undefined ? {} : { context: options });
      behave(router, cluster);
      const response = await cluster.post("/v1/chat/completions", chat("hi"));
      expect(response.status).toBe(503);
      const body = (await response.json()) as { error: { message: string } };
      expect(body.error.message).toBe(`No context worker is available: the remote router failed (${reason})`);
      expect(body.error.message).not.toContain("127.0.0.1");
      expect(cluster.contexts.every((w) => modelRequests(w).length === 0)).toBe(true);
      expect(
        cluster.logs.some(
          (line) => line["msg"] === `remote router failed to place a context leg: ${reason}` && line["router"] === router.url,
        ),
      ).toBe(true);
    });
  }

  test("one that cannot be reached fails the request with a 503 saying so", async () => {
    const { router, cluster } = await remoteCluster();
    router.stop();
    const response = await cluster.post("/v1/chat/completions", chat("hi"));
    expect(response.status).toBe(503);
    expect(((await response.json()) as { error: { message: string } }).error.message).toBe(
      "No context worker is available: the remote router failed (it could not be reached)",
    );
  });
});
