/**
 * Several proxy replicas in one test process in front of the same emulated workers, with or
 * without one coordinator (`disagg-proxy coordinator`, in process), and a client that sends
 * each request to the next replica in turn (a round-robin load balancer).
 */

import type { ProxyConfig } from "../../src/config/types.ts";
import { startCoordinator, type RunningCoordinator } from "../../src/coordinator/run.ts";
import type { EmulatedWorker, EmulatorOptions } from "../../src/emulator/index.ts";
import { memoryLogger } from "../../src/observability/logger.ts";
import { startProxy, type RunningProxy } from "../../src/server/serve.ts";
import { configFor, startWorkers } from "./cluster.ts";

export interface ReplicaSet extends AsyncDisposable {
  readonly contexts: readonly EmulatedWorker[];
  readonly generations: readonly EmulatedWorker[];
  readonly replicas: readonly RunningProxy[];
  /** Each replica's log records. */
  readonly logs: readonly Record<string, unknown>[][];
  readonly coordinatorLogs: Record<string, unknown>[];
  coordinator: RunningCoordinator | undefined;
  /** POSTs to the next replica in turn. */
  post(path: string, body: unknown): Promise<Response>;
  /** Starts the coordinator again on its port (after `coordinator.stop()`). */
  restartCoordinator(): Promise<void>;
}

export interface ReplicaSetOptions {
  readonly replicas: number;
  readonly contexts: number;
  readonly generations: number;
  readonly worker?: Partial<EmulatorOptions>;
  /** Start a coordinator and point every replica at it. */
  readonly coordinator: boolean;
  /** Settings of the replicas and the coordinator (routers, limits). */
  readonly config?: Partial<ProxyConfig>;
}

export async function startReplicaSet(options: ReplicaSetOptions): Promise<ReplicaSet> {
  const contexts = startWorkers("context", options.contexts, options.worker);
  const generations = startWorkers("generation", options.generations, options.worker);
  const base = configFor(contexts, generations, {
    retryDelayMs: 5,
    requestTimeoutMs: 10_000,
    serverStartTimeoutMs: 5000,
    nodeId: 1,
    logLevel: "debug",
    ...options.config,
  });
  const coordinatorLogger = memoryLogger();
  let coordinator: RunningCoordinator | undefined;
  let coordinatorPort = 0;
  const startBrain = async (): Promise<void> => {
    coordinator = startCoordinator(base, { port: coordinatorPort, reservationTimeoutMs: 180_000 }, coordinatorLogger, "test");
    coordinatorPort = Number(coordinator.url.port);
    await coordinator.waitForWorkers();
  };
  if (options.coordinator) await startBrain();
  const logs = Array.from({ length: options.replicas }, () => memoryLogger());
  // Distinct node ids: the coordinator keys its reservations by disagg_request_id, which must not collide across replicas.
  const replicas = logs.map((logger, index) =>
    startProxy(
      {
        ...base,
        nodeId: 10 + index,
        ...(coordinator === undefined ? {} : { disaggCoordinatorUrl: coordinator.url.origin, coordinatorTimeoutMs: 300 }),
      },
      logger,
      "test",
    ),
  );
  await Promise.all(replicas.map((replica) => replica.waitForWorkers()));
  let turn = 0;
  const set: ReplicaSet = {
    contexts,
    generations,
    replicas,
    logs: logs.map((logger) => logger.records),
    coordinatorLogs: coordinatorLogger.records,
    get coordinator() {
      return coordinator;
    },
    set coordinator(value) {
      coordinator = value;
    },
    post(path, body) {
      const replica = replicas[turn++ % replicas.length];
      if (replica === undefined) throw new Error("no replica");
      return fetch(replica.url.origin + path, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
    },
    restartCoordinator: startBrain,
    async [Symbol.asyncDispose]() {
      await Promise.all(replicas.map((replica) => replica.stop()));
      await coordinator?.stop();
      await Promise.all([...contexts, ...generations].map((worker) => worker.stop()));
    },
  };
  return set;
}

/** The context workers' prefill, summed: prompt tokens and the part already cached (GET /emulator/prefill). */
export async function contextPrefill(workers: readonly EmulatedWorker[]): Promise<{ promptTokens: number; cachedTokens: number }> {
  let promptTokens = 0;
  let cachedTokens = 0;
  for (const worker of workers) {
    const tally = (await (await fetch(`${worker.url}/emulator/prefill`)).json()) as {
      context: { prompt_tokens: number; cached_tokens: number };
    };
    promptTokens += tally.context.prompt_tokens;
    cachedTokens += tally.context.cached_tokens;
  }
  return { promptTokens, cachedTokens };
}
