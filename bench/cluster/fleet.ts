/**
 * Several emulated context and generation workers and the proxy in front of them, configured
 * the way a TensorRT-LLM deployment is: a disagg_config.yaml (`-c`) naming the workers, each
 * section's router and KV block size, and conditional_disagg_config when asked for. Every
 * process is fresh, so no KV cache or router state carries over from another configuration.
 */

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { stopAll, waitReady } from "./cluster.ts";
import { spawnService, type Service } from "./service.ts";

const READY_TIMEOUT_MS = 15_000;

export type RouterType = "round_robin" | "load_balancing" | "conversation" | "kv_cache_aware";

export interface FleetSpec {
  /** Names the log files and the YAML: bench/out/logs/<name>-ctx0.log, <name>.yaml … */
  readonly name: string;
  readonly binary: string;
  readonly logDir: string;
  readonly contextWorkers: number;
  readonly generationWorkers: number;
  /** Flags for every emulated worker. */
  readonly workerFlags: readonly string[];
  readonly contextRouter: RouterType;
  readonly generationRouter: RouterType;
  /** kv_cache_config.tokens_per_block of both sections (the routers that hash blocks adopt it). */
  readonly tokensPerBlock: number;
  /** conditional_disagg_config.max_local_prefill_length; undefined: always disaggregated. */
  readonly maxLocalPrefillLength: number | undefined;
  readonly maxHttpRequests: number;
  /** Workers per role started but left out of the YAML until admitHeldBack() (a worker that joins cold). */
  readonly heldBack?: number;
}

export interface Fleet {
  /** Every worker, the held-back ones last. */
  readonly context: readonly Service[];
  readonly generation: readonly Service[];
  readonly proxy: Service;
  readonly configFile: string;
  /** Lists the held-back workers in the YAML and reloads the proxy (SIGHUP); resolves once they are ready. */
  admitHeldBack(): Promise<void>;
  stop(): Promise<void>;
}

export async function startFleet(spec: FleetSpec): Promise<Fleet> {
  const started: Service[] = [];
  try {
    const worker = async (role: "context" | "generation", index: number): Promise<Service> => {
      const cmd = [spec.binary, "worker", "--role", role, "--port", "0", "--host", "127.0.0.1", ...spec.workerFlags];
      const tag = role === "context" ? "ctx" : "gen";
      const service = await spawnService({ name: `${spec.name}-${tag}${index}`, cmd, logDir: spec.logDir });
      started.push(service);
      return service;
    };
    const held = spec.heldBack ?? 0;
    const [context, generation] = await Promise.all([
      Promise.all(Array.from({ length: spec.contextWorkers + held }, (_, i) => worker("context", i))),
      Promise.all(Array.from({ length: spec.generationWorkers + held }, (_, i) => worker("generation", i))),
    ]);
    const configFile = join(spec.logDir, `${spec.name}.yaml`);
    mkdirSync(spec.logDir, { recursive: true });
    writeFileSync(configFile, disaggConfig(spec, context.slice(0, spec.contextWorkers), generation.slice(0, spec.generationWorkers)));
    const proxy = await spawnService({
      name: `${spec.name}-proxy`,
      cmd: [spec.binary, "serve", "-c", configFile, "--host", "127.0.0.1", "--port", "0"],
      env: { BUN_CONFIG_MAX_HTTP_REQUESTS: String(spec.maxHttpRequests) },
      logDir: spec.logDir,
    });
    started.push(proxy);
    await waitReady(proxy.url);
    await waitEveryWorker(proxy.url);
    const admitHeldBack = async (): Promise<void> => {
      writeFileSync(configFile, disaggConfig(spec, context, generation));
      process.kill(proxy.pid, "SIGHUP");
      await waitEveryWorker(proxy.url, context.length + generation.length);
    };
    return { context, generation, proxy, configFile, admitHeldBack, stop: () => stopAll(started) };
  } catch (error) {
    await stopAll(started);
    throw error;
  }
}

/**
 * /health turns 200 once one worker of each role is ready; a worker that joins after the load
 * started would find the routers' state already made without it. So: until /cluster_info shows
 * every worker ready.
 */
async function waitEveryWorker(url: string, count = 0): Promise<void> {
  const deadline = performance.now() + READY_TIMEOUT_MS;
  while (performance.now() < deadline) {
    const info = await fetch(`${url}/cluster_info`, { headers: { connection: "close" } }).then(
      (r) => r.json() as Promise<{ workers?: Record<string, { ready: boolean }[]> }>,
      () => undefined,
    );
    const workers = Object.values(info?.workers ?? {}).flat();
    if (workers.length > 0 && workers.length >= count && workers.every((w) => w.ready)) return;
    await Bun.sleep(20);
  }
  throw new Error(`Not every worker behind ${url} became ready`);
}

/** TensorRT-LLM's disagg_config.yaml for these workers. */
export function disaggConfig(spec: FleetSpec, context: readonly Service[], generation: readonly Service[]): string {
  const section = (title: string, services: readonly Service[], router: RouterType): string[] => [
    `${title}:`,
    `  num_instances: ${services.length}`,
    `  urls: [${services.map((s) => JSON.stringify(new URL(s.url).host)).join(", ")}]`,
    `  router:`,
    `    type: ${router}`,
    // Only the routers that hash KV blocks take the block size; others would warn about it.
    ...(router === "conversation" || router === "kv_cache_aware"
      ? [`  kv_cache_config:`, `    tokens_per_block: ${spec.tokensPerBlock}`]
      : []),
  ];
  const conditional =
    spec.maxLocalPrefillLength === undefined
      ? []
      : [`conditional_disagg_config:`, `  max_local_prefill_length: ${spec.maxLocalPrefillLength}`];
  return [
    `# Written by bench/cluster/fleet.ts for the conversations benchmark.`,
    ...section("context_servers", context, spec.contextRouter),
    ...section("generation_servers", generation, spec.generationRouter),
    ...conditional,
    ``,
  ].join("\n");
}
