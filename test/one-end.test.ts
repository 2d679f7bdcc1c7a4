import { describe, expect, test } from "bun:test";
import { DEFAULTS, type ProxyConfig } from "../src/config/types.ts";
import { memoryLogger } from "../src/observability/logger.ts";
import type { RequestContext } from "../src/request/context.ts";
import type { Connection, RouteDeps } from "../src/routes/deps.ts";
import { countTokens } from "../src/routes/messages.ts";
import { model as oneModel, models } from "../src/routes/models.ts";
import { chatCompletions } from "../src/routes/openai.ts";
import { createApp, type App } from "../src/server/app.ts";

/** One slot: a request whose slot leaked would make the next one wait, then fail with 429. */
const CONFIG: ProxyConfig = {
  ...DEFAULTS,
  contextServers: ["http://127.0.0.1:9"],
  generationServers: ["http://127.0.0.1:9"],
  maxInflight: 1,
  admissionWaitMs: 0,
  nodeId: 1,
  configFile: undefined,
};

type Injection = (app: App, ctx: RequestContext) => never;

/** Holds a reservation as a leg would, then throws something that is not a ProxyError. */
const afterReserving: Injection = (app, ctx) => {
  ctx.hold(app.placement.table.reserve(ctx.disaggRequestId, "context", "http://127.0.0.1:9", 0));
  throw new TypeError("injected");
};

/** The routes' dependencies with one step replaced by a throw after the request started. */
function injected(app: App, at: "pipeline sync" | "pipeline async" | "settings" | "worker call", ended: () => void): RouteDeps {
  const deps: RouteDeps = {
    version: app.version,
    bodyLimits: app.bodyLimits,
    timings: app.timings,
    draining: false,
    settings: app.settings,
    startRequest: async (route, stream, client) => {
      const ctx = await app.startRequest(route, stream, client);
      ctx.atEnd({ atRequestEnd: ended });
      return ctx;
    },
    runPipeline: (ctx, input) => app.runPipeline(ctx, input),
    callWorker: (ctx, call) => app.callWorker(ctx, call),
    workersReady: () => app.workersReady(),
    modelReady: (model) => app.modelReady(model),
    modelList: () => app.modelList(),
    clusterInfo: () => app.clusterInfo(),
    metricsText: () => app.metricsText(),
    perfMetrics: () => app.perfMetrics(),
    clusterStorage: app.clusterStorage,
    logger: app.logger,
  };
  if (at === "pipeline sync") return { ...deps, runPipeline: (ctx) => afterReserving(app, ctx) };
  if (at === "pipeline async") return { ...deps, runPipeline: async (ctx) => afterReserving(app, ctx) };
  if (at === "worker call") return { ...deps, callWorker: async (ctx) => afterReserving(app, ctx) };
  // "settings": read only once the stream's answer is being built (after the pipeline started).
  const settings = {
    ...app.settings,
    get maxSseEventBytes(): number {
      throw new TypeError("injected");
    },
  };
  return {
    ...deps,
    settings,
    runPipeline: async (ctx) => {
      ctx.hold(app.placement.table.reserve(ctx.disaggRequestId, "generation", "http://127.0.0.1:9", 0));
      return new Promise(() => {});
    },
  };
}

/** No socket: nothing to lift, no peer. */
const NO_CONNECTION: Connection = { keepOpen: () => ({ restore: () => {} }), peer: () => undefined };

function post(path: string, body: unknown): Request {
  return new Request(`http://proxy${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

const CHAT = { model: "m", messages: [{ role: "user", content: "hi" }] };

const CASES = [
  {
    name: "a synchronous throw from the pipeline",
    at: "pipeline sync",
    call: (d: RouteDeps) => chatCompletions(d, post("/v1/chat/completions", CHAT), NO_CONNECTION),
  },
  {
    name: "a rejected pipeline (JSON answer)",
    at: "pipeline async",
    call: (d: RouteDeps) => chatCompletions(d, post("/v1/chat/completions", CHAT), NO_CONNECTION),
  },
  {
    name: "a rejected pipeline (stream answer)",
    at: "pipeline async",
    call: (d: RouteDeps) => chatCompletions(d, post("/v1/chat/completions", { ...CHAT, stream: true }), NO_CONNECTION),
  },
  {
    name: "a throw while the stream answer is built",
    at: "settings",
    call: (d: RouteDeps) => chatCompletions(d, post("/v1/chat/completions", { ...CHAT, stream: true }), NO_CONNECTION),
  },
  {
    name: "a throw in /v1/models' worker call",
    at: "worker call",
    call: (d: RouteDeps) => models(d, new Request("http://proxy/v1/models")),
  },
  {
    name: "a throw in /v1/models/{id}'s worker call",
    at: "worker call",
    call: (d: RouteDeps) => oneModel(d, new Request("http://proxy/v1/models/m", { headers: { "anthropic-version": "2023-06-01" } })),
  },
  {
    name: "a throw in count_tokens' worker call",
    at: "worker call",
    call: (d: RouteDeps) => countTokens(d, post("/v1/messages/count_tokens", CHAT)),
  },
] as const;

describe("a request ends once, whatever throws after it started", () => {
  for (const { name, at, call } of CASES) {
    test(`${name}: a 500, the admission slot and the reservation released, one error line with its cause`, async () => {
      const logger = memoryLogger();
      const app = createApp(CONFIG, logger, "test");
      const end = Promise.withResolvers<void>();
      const response = await call(injected(app, at, end.resolve));
      expect(response.status).toBe(500);
      await response.arrayBuffer();
      await end.promise;
      expect(app.requests.active.size).toBe(0);
      expect(app.placement.table.active()).toBe(0);
      const lines = logger.records.filter((record) => record["msg"] === "request");
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatchObject({ level: "error", status: 500, outcome: "internal_error", cause: { name: "TypeError" } });
      // The slot is free: with one slot and no wait, a leak would refuse this with 429.
      const next = await app.startRequest("/v1/chat/completions", false, new Request("http://proxy/"));
      next.end(200);
      expect(logger.records.filter((record) => record["msg"] === "request")).toHaveLength(2);
    });
  }
});
