import { DEFAULTS, type ProxyConfig } from "../../src/config/types.ts";
import { startEmulatedWorker, type EmulatedWorker, type EmulatorOptions } from "../../src/emulator/index.ts";
import { memoryLogger } from "../../src/observability/logger.ts";
import { startProxy, type RunningProxy } from "../../src/server/serve.ts";
import { eventually } from "./wait.ts";

export { eventually };

export type WorkerSpec = Omit<EmulatorOptions, "role"> & { role?: EmulatorOptions["role"] };

export interface ClusterOptions {
  readonly contexts?: readonly WorkerSpec[];
  readonly generations?: readonly WorkerSpec[];
  readonly config?: Partial<ProxyConfig>;
  readonly idleTimeoutS?: number;
}

export interface TestCluster extends AsyncDisposable {
  readonly proxy: RunningProxy;
  readonly url: string;
  readonly contexts: readonly EmulatedWorker[];
  readonly generations: readonly EmulatedWorker[];
  readonly logs: Record<string, unknown>[];
  post(path: string, body: unknown, init?: RequestInit): Promise<Response>;
}

/** Emulated workers of `role` on port 0: `count` of them with the `shared` options, or one per spec (a spec's own options win). */
export function startWorkers(
  role: EmulatorOptions["role"],
  count: number | readonly WorkerSpec[],
  shared: Partial<EmulatorOptions> = {},
): EmulatedWorker[] {
  const specs = typeof count === "number" ? Array.from({ length: count }, () => ({})) : count;
  return specs.map((spec) => startEmulatedWorker({ role, ...shared, ...spec }));
}

/** A config that serves on loopback port 0 in front of these workers as node 3, polling their health every 20 ms; `settings` last. */
export function configFor(
  contexts: readonly EmulatedWorker[],
  generations: readonly EmulatedWorker[],
  settings: Partial<ProxyConfig> = {},
): ProxyConfig {
  return {
    ...DEFAULTS,
    host: "127.0.0.1",
    port: 0,
    contextServers: contexts.map((w) => w.url),
    generationServers: generations.map((w) => w.url),
    serverStartPollMs: 20,
    nodeId: 3,
    configFile: undefined,
    ...settings,
  };
}

/** A proxy on port 0 in front of emulated workers on port 0, with test-sized timings. */
export async function startCluster(options: ClusterOptions = {}): Promise<TestCluster> {
  // Workers share the proxy's internal key, as a deployment's do, and so check its signatures.
  const key = options.config?.internalAuthKey;
  const shared = key === undefined ? {} : { internalAuthKey: key };
  const contexts = startWorkers("context", options.contexts ?? [{}], shared);
  const generations = startWorkers("generation", options.generations ?? [{}], shared);
  const logger = memoryLogger();
  const config = configFor(contexts, generations, {
    retryDelayMs: 5,
    requestTimeoutMs: 5000,
    serverStartTimeoutMs: 2000,
    logLevel: "debug",
    maxBodyBytes: 1024 * 1024,
    ...options.config,
  });
  const proxy = startProxy(config, logger, "test", options.idleTimeoutS === undefined ? {} : { idleTimeoutS: options.idleTimeoutS });
  await proxy.waitForWorkers();
  const url = proxy.url.origin;
  return {
    proxy,
    url,
    contexts,
    generations,
    logs: logger.records,
    post: (path, body, init) =>
      fetch(url + path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: typeof body === "string" ? body : JSON.stringify(body),
        ...init,
      }),
    async [Symbol.asyncDispose]() {
      await proxy.stop();
      await Promise.all([...contexts, ...generations].map((w) => w.stop()));
    },
  };
}

/** Reads a whole SSE body and returns each `data:` payload in order. */
export async function sseData(response: Response): Promise<string[]> {
  const text = await response.text();
  return text
    .split("\n")
    .filter((line) => line.startsWith("data: "))
    .map((line) => line.slice(6));
}
