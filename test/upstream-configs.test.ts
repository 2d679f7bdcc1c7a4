/**
 * Real disagg_config.yaml files from NVIDIA/TensorRT-LLM (test/fixtures/upstream-configs/, each
 * with its origin and commit in its first line) start the proxy with no warning and serve
 * once their URLs point at workers (static files) or workers register (service discovery).
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readdirSync } from "node:fs";
import { join } from "node:path";
import { loadConfig, systemLoadDeps } from "../src/config/load.ts";
import { httpRegistrar } from "../src/discovery/index.ts";
import { startEmulatedWorker, type EmulatedWorker } from "../src/emulator/index.ts";
import { memoryLogger, silentLogger } from "../src/observability/logger.ts";
import { startProxy } from "../src/server/serve.ts";
import { eventually } from "./support/cluster.ts";

const DIR = join(import.meta.dir, "fixtures", "upstream-configs");
const FILES = readdirSync(DIR)
  .filter((name) => name.endsWith(".yaml"))
  .toSorted();
const chat = { model: "m", messages: [{ role: "user", content: "hello from an upstream config" }], max_tokens: 3 };

let workers: { context: EmulatedWorker[]; generation: EmulatedWorker[] };

beforeAll(() => {
  workers = {
    context: [0, 1].map(() => startEmulatedWorker({ role: "context" })),
    generation: [0, 1].map(() => startEmulatedWorker({ role: "generation" })),
  };
});

afterAll(async () => {
  await Promise.all([...workers.context, ...workers.generation].map((worker) => worker.stop()));
});

describe("upstream's own config files", () => {
  test("the corpus is there: a dozen files, each naming its origin", async () => {
    expect(FILES.length).toBeGreaterThanOrEqual(12);
    for (const name of FILES) expect(await Bun.file(join(DIR, name)).text()).toStartWith("# origin: NVIDIA/TensorRT-LLM ");
  });

  test.each(FILES)(
    "%s starts without a warning and serves",
    async (name) => {
      const text = await Bun.file(join(DIR, name)).text();
      const generationOnly = /num_instances: 0/.test(text);
      const discovered = text.includes("disagg_cluster:");
      // Where the file lists urls (or would have its workers launched for it), flags point them at emulated workers.
      const urls = discovered
        ? {}
        : { contextServers: workers.context.map((w) => w.url), generationServers: workers.generation.map((w) => w.url) };
      const deps = { ...systemLoadDeps(), env: generationOnly ? { TRTLLM_DISAGG_BENCHMARK_GEN_ONLY: "1" } : {} };
      const { config, warnings } = loadConfig(
        { configFile: join(DIR, name), host: "127.0.0.1", port: 0, serverStartTimeoutMs: 2000, ...urls },
        deps,
      );
      expect(warnings).toEqual([]);
      const logger = memoryLogger();
      const proxy = startProxy({ ...config, serverStartPollMs: 20, healthCheckIntervalMs: 50 }, logger, "test");
      const registrations: { stop(): Promise<void> }[] = [];
      try {
        if (discovered && config.discovery?.kind === "cluster") {
          const register = httpRegistrar({
            uri: proxy.url.origin,
            clusterName: config.discovery.clusterName,
            heartbeatMs: 500,
            ttlMs: 2000,
            logger: silentLogger,
          });
          for (const worker of workers.context.slice(0, config.discovery.minimalContext))
            registrations.push(register({ role: "context", host: "127.0.0.1", port: worker.port }));
          for (const worker of workers.generation.slice(0, config.discovery.minimalGeneration))
            registrations.push(register({ role: "generation", host: "127.0.0.1", port: worker.port }));
          await eventually(() => proxy.app.placement.pool.isReady(), 5000);
        } else {
          expect(await proxy.waitForWorkers()).toBe(true);
        }
        const response = await fetch(`${proxy.url.origin}/v1/chat/completions`, { method: "POST", body: JSON.stringify(chat) });
        expect(response.status).toBe(200);
        expect(logger.records.filter((record) => record["level"] === "warn" || record["level"] === "error")).toEqual([]);
      } finally {
        await Promise.all(registrations.map((registration) => registration.stop()));
        await proxy.stop();
      }
    },
    20_000,
  );
});
