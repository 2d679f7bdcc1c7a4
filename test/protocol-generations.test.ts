import { describe, expect, test } from "bun:test";
import { admitFields, generationOf } from "../src/emulator/engine/protocol-generation.ts";
import type { EmulatedWorker } from "../src/emulator/index.ts";
import { isJsonObject, parseJson, type JsonObject, type JsonValue } from "../src/json/json.ts";
import { silentLogger } from "../src/observability/logger.ts";
import { HealthMonitor } from "../src/workers/health-monitor.ts";
import { WorkerPool } from "../src/workers/worker-pool.ts";
import { startCluster, type TestCluster } from "./support/cluster.ts";
import { fakeWorker } from "./support/fake-worker.ts";

/**
 * The proxy against each worker generation the emulator plays (1.3.0rc14 before ctx_usage,
 * 1.3.0rc18 with it, 1.3.0rc28 with Responses disaggregation, 1.4.0rc0 newest) and a mixed fleet: every route, streamed and not,
 * succeeds; no worker is ever sent a field its version rejects; and where the generation
 * worker takes ctx_usage the client's usage is what the context phase measured.
 */

const OLD = "1.3.0rc14";
const CTX_USAGE = "1.3.0rc18";
const RESPONSES = "1.3.0rc28";
const NEWEST = "1.4.0rc0";

type Route = "chat" | "completions" | "messages" | "responses";
const ROUTES: readonly Route[] = ["chat", "completions", "messages", "responses"];
const PATH: Record<Route, string> = {
  chat: "/v1/chat/completions",
  completions: "/v1/completions",
  messages: "/v1/messages",
  responses: "/v1/responses",
};
const WORKER_API: Record<string, "chat" | "completions" | "responses"> = {
  "/v1/chat/completions": "chat",
  "/v1/completions": "completions",
  "/v1/responses": "responses",
};

// Long enough to fill KV blocks of 4 tokens, so a repeated prompt has cached tokens.
const PROMPT = "Tell me about the generations of the worker protocol and why usage matters so much here";

function bodyOf(route: Route, stream: boolean): JsonObject {
  const usage = stream ? { stream_options: { include_usage: true } } : {};
  const bodies: Record<Route, JsonObject> = {
    chat: { model: "m", messages: [{ role: "user", content: PROMPT }], max_tokens: 6, stream, ...usage },
    completions: { model: "m", prompt: PROMPT, max_tokens: 6, stream, ...usage },
    // Thinking makes the Anthropic adapter send injected_chat_template_kwargs.
    messages: {
      model: "m",
      max_tokens: 2000,
      stream,
      thinking: { type: "enabled", budget_tokens: 1024 },
      messages: [{ role: "user", content: PROMPT }],
    },
    responses: { model: "m", input: PROMPT, max_output_tokens: 6, stream },
  };
  return bodies[route];
}

interface Usage {
  readonly prompt: number;
  readonly cached: number;
}

function numberAt(value: JsonValue | undefined, ...path: string[]): number | undefined {
  let at = value;
  for (const key of path) at = isJsonObject(at) ? at[key] : undefined;
  return typeof at === "number" ? at : undefined;
}

/** The usage an OpenAI, Anthropic or Responses object reports, as prompt and cached tokens. */
function usageOf(object: JsonValue | undefined): Usage | undefined {
  const usage = isJsonObject(object) ? object["usage"] : undefined;
  if (!isJsonObject(usage)) return undefined;
  if (usage["prompt_tokens"] !== undefined) {
    return { prompt: numberAt(usage, "prompt_tokens") ?? -1, cached: numberAt(usage, "prompt_tokens_details", "cached_tokens") ?? 0 };
  }
  if (
    usage["cache_read_input_tokens"] !== undefined ||
    (object !== undefined && isJsonObject(object) && object["type"] !== undefined && usage["input_tokens_details"] === undefined)
  ) {
    // Anthropic: input_tokens excludes what was read from the cache.
    const cached = numberAt(usage, "cache_read_input_tokens") ?? 0;
    return { prompt: (numberAt(usage, "input_tokens") ?? -1) + cached, cached };
  }
  return { prompt: numberAt(usage, "input_tokens") ?? -1, cached: numberAt(usage, "input_tokens_details", "cached_tokens") ?? 0 };
}

/** The final usage the client saw: the JSON answer's, or the last one a stream carried. */
async function clientUsage(route: Route, response: Response, stream: boolean): Promise<Usage | undefined> {
  const text = await response.text();
  if (!stream) return usageOf(parseJson(text));
  let last: Usage | undefined;
  for (const line of text.split("\n")) {
    if (!line.startsWith("data: ") || line === "data: [DONE]") continue;
    const event = parseJson(line.slice(6));
    const holder = route === "responses" && isJsonObject(event) ? event["response"] : event;
    last = usageOf(holder) ?? last;
    if (route === "messages" && isJsonObject(event) && event["type"] === "message_delta") {
      const usage = event["usage"];
      const cached = numberAt(usage, "cache_read_input_tokens") ?? 0;
      last = { prompt: (numberAt(usage, "input_tokens") ?? -1) + cached, cached };
    }
  }
  return last;
}

/** What the context phase measured: the usage of the newest context answer a worker sent. */
function contextUsage(workers: readonly EmulatedWorker[]): Usage | undefined {
  const answered = workers.flatMap((worker) => worker.requests.filter((r) => r.phase === "context" && r.sent.length > 0));
  const latest = answered.at(-1);
  if (latest === undefined) return undefined;
  const bytes = Buffer.concat(latest.sent.map((part) => Buffer.from(part)));
  return usageOf(parseJson(bytes.toString("utf8")));
}

/** Every request a worker got, judged by the request model of the version it plays. */
function rejectedFields(workers: readonly EmulatedWorker[], versions: readonly string[]): string[] {
  const problems: string[] = [];
  workers.forEach((worker, index) => {
    for (const request of worker.requests) {
      const api = WORKER_API[request.path];
      if (api === undefined || !isJsonObject(request.body)) continue;
      try {
        admitFields(generationOf(versions[index]), api, request.body);
      } catch (error) {
        problems.push(`${versions[index]} ${request.path}: ${String(error)}`);
      }
    }
  });
  return problems;
}

interface Fleet {
  readonly name: string;
  readonly contexts: readonly string[];
  readonly generations: readonly string[];
}

const FLEETS: readonly Fleet[] = [
  { name: `all ${OLD}`, contexts: [OLD], generations: [OLD] },
  { name: `all ${CTX_USAGE}`, contexts: [CTX_USAGE], generations: [CTX_USAGE] },
  { name: `all ${RESPONSES}`, contexts: [RESPONSES], generations: [RESPONSES] },
  { name: `all ${NEWEST}`, contexts: [NEWEST], generations: [NEWEST] },
  { name: "mixed", contexts: [NEWEST, OLD, CTX_USAGE], generations: [OLD, NEWEST, CTX_USAGE] },
];

/** Responses is disaggregated only when a context and a generation worker both can (#18497, 1.3.0rc28). */
function fleetDisaggregatesResponses(fleet: Fleet): boolean {
  return fleet.contexts.some(disaggregatesResponses) && fleet.generations.some(disaggregatesResponses);
}

function disaggregatesResponses(version: string): boolean {
  return version === RESPONSES || version === NEWEST;
}

function spec(protocolVersion: string): { protocolVersion: string; tokensPerBlock: number; recordReplies: boolean } {
  return { protocolVersion, tokensPerBlock: 4, recordReplies: true };
}

async function fleetCluster(fleet: Fleet, config: Parameters<typeof startCluster>[0] = {}): Promise<TestCluster> {
  return startCluster({ contexts: fleet.contexts.map(spec), generations: fleet.generations.map(spec), ...config });
}

function post(cluster: TestCluster, route: Route, stream: boolean): Promise<Response> {
  // A session header names the conversation: conversation_params (or the older disaggregated_params.conversation_id).
  return cluster.post(PATH[route], bodyOf(route, stream), { headers: { "content-type": "application/json", "x-session-id": "conv-7" } });
}

describe.each(FLEETS)("worker generations: $name", (fleet) => {
  test.each(ROUTES.flatMap((route) => [false, true].map((stream) => [route, stream] as const)))(
    "%s (stream %p) succeeds and no worker is sent a field it rejects",
    async (route, stream) => {
      await using cluster = await fleetCluster(fleet);
      for (let turn = 0; turn < 2; turn++) {
        const response = await post(cluster, route, stream);
        if (route === "responses" && !fleetDisaggregatesResponses(fleet)) {
          expect(response.status).toBe(501);
          expect(await response.text()).toContain(`TensorRT-LLM ${RESPONSES}`);
          continue;
        }
        expect(response.status).toBe(200);
        await response.arrayBuffer();
      }
      expect(rejectedFields(cluster.contexts, fleet.contexts)).toEqual([]);
      expect(rejectedFields(cluster.generations, fleet.generations)).toEqual([]);
    },
  );
});

describe.each([CTX_USAGE, NEWEST])("usage on workers with ctx_usage (%s)", (version) => {
  test.each(ROUTES.flatMap((route) => [false, true].map((stream) => [route, stream] as const)))(
    "%s (stream %p): the client's prompt and cached tokens are the context phase's",
    async (route, stream) => {
      if (route === "responses" && version !== NEWEST) return;
      await using cluster = await fleetCluster({ name: version, contexts: [version], generations: [version] });
      // The second turn finds the prompt in the context worker's cache, not in the generation worker's.
      await (await post(cluster, route, stream)).arrayBuffer();
      const usage = await clientUsage(route, await post(cluster, route, stream), stream);
      const measured = contextUsage(cluster.contexts);
      expect(measured?.cached).toBeGreaterThan(0);
      expect(usage).toEqual(measured);
    },
  );
});

describe("injected_chat_template_kwargs (#19351, merged the day of the 1.3.0rc30 and 1.4.0rc0 bumps)", () => {
  test("a thinking request on 1.3.0rc28 workers is served without the field and without a refusal; 1.4.0rc0 workers get it", async () => {
    for (const version of [RESPONSES, NEWEST]) {
      await using cluster = await fleetCluster({ name: version, contexts: [version], generations: [version] });
      for (const stream of [false, true]) {
        const response = await post(cluster, "messages", stream);
        expect(response.status).toBe(200);
        await response.arrayBuffer();
      }
      const sent = [...cluster.contexts, ...cluster.generations].flatMap((worker) =>
        worker.requests.filter((r) => r.path === "/v1/chat/completions"),
      );
      expect(sent).toHaveLength(4);
      const carried = sent.map((r) => isJsonObject(r.body) && r.body["injected_chat_template_kwargs"] !== undefined);
      expect(carried).toEqual(Array.from({ length: 4 }, () => version === NEWEST));
      expect(cluster.logs.filter((line) => String(line["msg"]).includes("rejected an optional field"))).toEqual([]);
      expect(rejectedFields(cluster.contexts, [version])).toEqual([]);
      expect(rejectedFields(cluster.generations, [version])).toEqual([]);
    }
  });
});

describe("usage on workers before ctx_usage", () => {
  test("the generation worker's own count is what an older worker reports, so cached tokens differ", async () => {
    await using cluster = await fleetCluster({ name: OLD, contexts: [OLD], generations: [OLD] });
    await (await post(cluster, "chat", false)).arrayBuffer();
    const usage = await clientUsage("chat", await post(cluster, "chat", false), false);
    const measured = contextUsage(cluster.contexts);
    expect(measured?.cached).toBeGreaterThan(0);
    expect(usage?.cached).not.toBe(measured?.cached);
    const generation = cluster.generations[0]!.requests.filter((r) => r.phase === "generation");
    expect(
      generation.every(
        (r) =>
          isJsonObject(r.body) && isJsonObject(r.body["disaggregated_params"]) && r.body["disaggregated_params"]["ctx_usage"] === undefined,
      ),
    ).toBe(true);
  });
});

describe("Responses on workers that cannot disaggregate it", () => {
  test("--responses-fallback aggregated serves it whole on one generation worker, streamed and not", async () => {
    await using cluster = await fleetCluster(
      { name: CTX_USAGE, contexts: [CTX_USAGE], generations: [CTX_USAGE] },
      { config: { responsesFallback: "aggregated" } },
    );
    for (const stream of [false, true]) {
      const response = await post(cluster, "responses", stream);
      expect(response.status).toBe(200);
      expect(await response.text()).toContain(stream ? "response.completed" : '"status":"completed"');
    }
    expect(cluster.contexts[0]!.requests.filter((r) => r.path === "/v1/responses")).toHaveLength(0);
    expect(cluster.generations[0]!.requests.filter((r) => r.phase === "aggregated")).toHaveLength(2);
    expect(cluster.logs.some((line) => String(line["msg"]).includes("served aggregated"))).toBe(true);
  });
});

describe("a worker whose version overstates what it accepts", () => {
  test("its 400 naming the field turns the field off for it, logged once, and the context leg is retried once without it", async () => {
    // The proxy is told every worker is the newest; the context worker is really 1.3.0rc18.
    await using cluster = await fleetCluster(
      { name: "lying", contexts: [CTX_USAGE], generations: [NEWEST] },
      { config: { workerProtocol: NEWEST, maxRetries: 0 } },
    );
    for (let turn = 0; turn < 3; turn++) {
      const response = await post(cluster, "chat", false);
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }
    const refused = cluster.logs.filter((line) => String(line["msg"]).includes("rejected an optional field"));
    expect(refused).toHaveLength(1);
    // The log names the version the worker reported, beside the override that overstated it.
    expect(refused[0]).toMatchObject({ field: "conversation_params", version: CTX_USAGE });
    // One rejected attempt, then every context request fits the worker.
    expect(rejectedFields(cluster.contexts, [CTX_USAGE])).toHaveLength(1);
    expect(cluster.contexts[0]!.requests.filter((r) => r.phase === "context")).toHaveLength(4);
  });
});

/** The body of the last chat request the first of these workers was sent. */
function lastChatBody(workers: readonly EmulatedWorker[]): JsonObject {
  const body = workers[0]!.requests.findLast((r) => r.path === "/v1/chat/completions")?.body;
  return isJsonObject(body) ? body : {};
}

describe("a client cannot switch a field off for other clients", () => {
  test("a 400 for a client's own field, echoing field names in its value, leaves every worker's fields as they were", async () => {
    await using cluster = await fleetCluster({ name: "newest", contexts: [NEWEST], generations: [NEWEST] }, { config: { maxRetries: 0 } });
    // CompletionRequest has no injected_chat_template_kwargs: the worker's 400 echoes the value, which names two fields.
    const hostile = await cluster.post("/v1/completions", {
      model: "m",
      prompt: "hi",
      max_tokens: 3,
      conversation_params: { conversation_id: "c1" },
      injected_chat_template_kwargs: ["conversation_params ctx_usage"],
    });
    expect(hostile.status).toBe(400);
    expect(await hostile.text()).toContain("extra_forbidden");
    expect(cluster.logs.filter((line) => String(line["msg"]).includes("rejected an optional field"))).toHaveLength(0);
    // The next client's conversation still reaches both workers, with the context phase's usage.
    const innocent = await post(cluster, "chat", false);
    expect(innocent.status).toBe(200);
    await innocent.arrayBuffer();
    expect(lastChatBody(cluster.contexts)["conversation_params"]).toEqual({ conversation_id: "conv-7" });
    const genParams = lastChatBody(cluster.generations)["disaggregated_params"];
    expect(isJsonObject(genParams) && genParams["ctx_usage"] !== undefined).toBe(true);
  });
});

describe("packed ids from a context worker", () => {
  test("in a completions answer they go on as the prompt's list, and a generation worker's 400 for them takes no field from it", async () => {
    // A context worker that packs the ids unasked; a generation worker whose CompletionRequest forbids the field.
    using ctx = fakeWorker(() =>
      Response.json({
        id: "cmpl-1",
        object: "text_completion",
        model: "m",
        choices: [
          {
            index: 0,
            text: "",
            finish_reason: "length",
            disaggregated_params: { request_type: "context_only", ctx_request_id: 5, disagg_request_id: 7 },
          },
        ],
        prompt_token_ids: null,
        prompt_token_ids_b64: Buffer.from(new Int32Array([11, 12]).buffer).toString("base64"),
      }),
    );
    const received: JsonObject[] = [];
    using gen = fakeWorker(async (request) => {
      if (request.method !== "POST") return new Response(null, { status: 404 });
      const body = (await request.json()) as JsonObject;
      received.push(body);
      if (body["prompt_token_ids_b64"] !== undefined) {
        const message =
          "1 validation error for CompletionRequest: [{'type': 'extra_forbidden', 'loc': ('body', 'prompt_token_ids_b64'), 'msg': 'Extra inputs are not permitted', 'input': 'x'}]";
        return Response.json({ error: message }, { status: 400 });
      }
      return Response.json({
        id: "cmpl-1",
        object: "text_completion",
        model: "m",
        choices: [{ index: 0, text: "hi", finish_reason: "stop" }],
      });
    });
    await using cluster = await startCluster({
      config: { contextServers: [ctx.url.origin], generationServers: [gen.url.origin], workerProtocol: NEWEST },
    });
    const response = await cluster.post("/v1/completions", { model: "m", prompt: "hello there", max_tokens: 3 });
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(received.map((body) => [body["prompt"], body["prompt_token_ids_b64"]])).toEqual([[[11, 12], undefined]]);
    expect(cluster.logs.filter((line) => String(line["msg"]).includes("rejected an optional field"))).toHaveLength(0);
  });
});

describe("worker versions are visible", () => {
  test("/cluster_info and the metrics show each worker's version", async () => {
    await using cluster = await fleetCluster({ name: "mixed", contexts: [OLD], generations: [NEWEST] });
    const info = (await (await fetch(`${cluster.url}/cluster_info`)).json()) as {
      workers: Record<string, { version: string; protocol: { accepts: string[] } }[]>;
    };
    expect(info.workers["context"]?.[0]).toMatchObject({ version: OLD, protocol: { accepts: [] } });
    expect(info.workers["generation"]?.[0]?.version).toBe(NEWEST);
    expect(info.workers["generation"]?.[0]?.protocol.accepts).toContain("ctx_usage");
    const metrics = await (await fetch(`${cluster.url}/metrics`)).text();
    expect(metrics).toContain(`version="${OLD}"`);
    expect(metrics).toContain(`version="${NEWEST}"`);
  });
});

describe("a worker without GET /version", () => {
  test("takes the version its registration announced, else the conservative set", async () => {
    using announced = fakeWorker(() => new Response(null, { status: 404 }));
    using silent = fakeWorker(() => new Response(null, { status: 404 }));
    const pool = new WorkerPool([], []);
    pool.add("context", `http://127.0.0.1:${announced.port}`, "1.3.0rc18");
    pool.add("generation", `http://127.0.0.1:${silent.port}`);
    const monitor = new HealthMonitor(
      pool,
      { healthCheckTimeoutMs: 1000, healthCheckFailures: 1, healthCheckSuccesses: 1 },
      silentLogger,
      fetch,
    );
    await monitor.checkAll(new AbortController().signal);
    const [context] = pool.ready("context");
    const [generation] = pool.ready("generation");
    expect(context?.protocol).toMatchObject({ version: "1.3.0rc18", source: "reported" });
    expect(context?.protocol.accepts.has("ctx_usage")).toBe(true);
    expect(generation?.protocol).toMatchObject({ version: undefined, source: "unknown" });
    expect(generation?.protocol.accepts.size).toBe(0);
  });
});

describe("gen_tokids_ctxbytes in a mixed fleet", () => {
  test("a newest context worker packs the token ids; an older generation worker gets them as a list", async () => {
    await using cluster = await fleetCluster(
      { name: "b64", contexts: [NEWEST], generations: [CTX_USAGE] },
      { config: { genTokidsCtxbytes: true } },
    );
    for (const stream of [false, true]) {
      const response = await post(cluster, "chat", stream);
      expect(response.status).toBe(200);
      await response.arrayBuffer();
    }
    const context = cluster.contexts[0]!.requests.filter((r) => r.phase === "context");
    expect(
      context.every(
        (r) =>
          isJsonObject(r.body) &&
          isJsonObject(r.body["disaggregated_params"]) &&
          r.body["disaggregated_params"]["return_prompt_token_ids_b64"] === true,
      ),
    ).toBe(true);
    const generation = cluster.generations[0]!.requests.filter((r) => r.phase === "generation");
    expect(generation).toHaveLength(2);
    for (const request of generation) {
      const body = isJsonObject(request.body) ? request.body : {};
      expect(body["prompt_token_ids_b64"]).toBeUndefined();
      expect(Array.isArray(body["prompt_token_ids"])).toBe(true);
    }
    expect(rejectedFields(cluster.generations, [CTX_USAGE])).toEqual([]);
  });

  test("an older context worker is not asked for packed ids", async () => {
    await using cluster = await fleetCluster(
      { name: "b64-old", contexts: [CTX_USAGE], generations: [NEWEST] },
      { config: { genTokidsCtxbytes: true } },
    );
    const response = await post(cluster, "chat", false);
    expect(response.status).toBe(200);
    await response.arrayBuffer();
    expect(rejectedFields(cluster.contexts, [CTX_USAGE])).toEqual([]);
  });
});

describe("a worker that comes back as another release", () => {
  test("is asked its version again when it rejoins, and sent what the new one takes", async () => {
    let healthy = true;
    let version = OLD;
    using worker = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch(request) {
        const path = new URL(request.url).pathname;
        if (path === "/health") return new Response(null, { status: healthy ? 200 : 503 });
        if (path === "/version") return Response.json({ version });
        return Response.json({});
      },
    });
    const pool = new WorkerPool([`http://127.0.0.1:${worker.port}`], []);
    const monitor = new HealthMonitor(
      pool,
      { healthCheckTimeoutMs: 1000, healthCheckFailures: 1, healthCheckSuccesses: 1 },
      silentLogger,
      fetch,
    );
    const signal = new AbortController().signal;
    await monitor.checkAll(signal);
    expect(pool.ready("context")[0]?.protocol.version).toBe(OLD);
    expect(pool.ready("context")[0]?.protocol.accepts.has("ctx_usage")).toBe(false);
    healthy = false;
    await monitor.checkAll(signal);
    expect(pool.ready("context")).toHaveLength(0);
    // Upgraded while it was away.
    version = NEWEST;
    healthy = true;
    await monitor.checkAll(signal);
    expect(pool.ready("context")[0]?.protocol.version).toBe(NEWEST);
    expect(pool.ready("context")[0]?.protocol.accepts.has("ctx_usage")).toBe(true);
  });
});

describe("worker generations in generation-first order: mixed fleet", () => {
  const fleet = FLEETS.find((f) => f.name === "mixed")!;
  test.each(ROUTES.flatMap((route) => [false, true].map((stream) => [route, stream] as const)))(
    "%s (stream %p) succeeds and no worker is sent a field it rejects",
    async (route, stream) => {
      await using cluster = await fleetCluster(fleet, { config: { schedule: "generation_first" } });
      for (let turn = 0; turn < 3; turn++) {
        const response = await post(cluster, route, stream);
        expect(response.status).toBe(200);
        await response.arrayBuffer();
      }
      expect(rejectedFields(cluster.contexts, fleet.contexts)).toEqual([]);
      expect(rejectedFields(cluster.generations, fleet.generations)).toEqual([]);
    },
  );
});
