/** One context worker, one generation worker and the proxy in front of them, as separate processes. */

import { join } from "node:path";
import { spawnService, type Service, serveArgs } from "./service.ts";

export interface ClusterSpec {
  /** Names the log files: bench/out/logs/<name>-proxy.log … */
  readonly name: string;
  readonly binary: string;
  readonly logDir: string;
  /** Extra flags for both emulated workers. */
  readonly workerFlags?: readonly string[];
  readonly proxyFlags?: readonly string[];
  /** Bun's fetch cap on simultaneous upstream requests, given to the proxy (style §3.13). */
  readonly maxHttpRequests: number;
  /** Run the proxy from source under `bun --cpu-prof`, writing profiles here. */
  readonly profileDir?: string | undefined;
  readonly root: string;
  /** Also start the floor relay (bench/cluster/floor-relay.ts, native pipe) on the same workers. */
  readonly withFloor?: boolean;
  /** Also start the floor relay's variant that reads the worker's stream in JS. */
  readonly withJsFloor?: boolean;
}

export interface Cluster {
  readonly context: Service;
  readonly generation: Service;
  readonly proxy: Service;
  /** The floor relay, when the spec asked for it. */
  readonly floor: Service | undefined;
  /** The floor relay reading the stream through a JS pull stream, when the spec asked for it. */
  readonly floorJs: Service | undefined;
  /** Process ids by role, for /proc sampling. */
  readonly pids: Readonly<Record<"proxy" | "context" | "generation", number>>;
  /** Every process of the cluster by name (the floor's too when it runs), for CPU accounting. */
  readonly sampled: Readonly<Record<string, number>>;
  stop(): Promise<void>;
}

const READY_TIMEOUT_MS = 15_000;

export async function startCluster(spec: ClusterSpec): Promise<Cluster> {
  const started: Service[] = [];
  try {
    const worker = async (role: "context" | "generation"): Promise<Service> => {
      const cmd = [spec.binary, "worker", "--role", role, "--port", "0", "--host", "127.0.0.1", ...(spec.workerFlags ?? [])];
      const service = await spawnService({ name: `${spec.name}-${role}`, cmd, logDir: spec.logDir });
      started.push(service);
      return service;
    };
    const context = await worker("context");
    const generation = await worker("generation");
    const proxy = await spawnService({
      name: `${spec.name}-proxy`,
      cmd: [...proxyCommand(spec), ...serveArgs(context.url, generation.url), ...(spec.proxyFlags ?? [])],
      // Its start-up variable set, so the proxy does not re-execute itself: under --cpu-prof, a
      // re-exec was sometimes killed at once by the profiler's SIGPWR (Bun 1.4.5), with no output.
      env: { BUN_CONFIG_MAX_HTTP_REQUESTS: String(spec.maxHttpRequests) },
      logDir: spec.logDir,
      cwd: spec.root,
    });
    started.push(proxy);
    await waitReady(proxy.url);
    const floor = spec.withFloor === true ? await spawnFloor(spec, context.url, generation.url, "native") : undefined;
    if (floor !== undefined) started.push(floor);
    const floorJs = spec.withJsFloor === true ? await spawnFloor(spec, context.url, generation.url, "js") : undefined;
    if (floorJs !== undefined) started.push(floorJs);
    return {
      context,
      generation,
      proxy,
      floor,
      floorJs,
      pids: { proxy: proxy.pid, context: context.pid, generation: generation.pid },
      sampled: {
        proxy: proxy.pid,
        context: context.pid,
        generation: generation.pid,
        ...(floor ? { floor: floor.pid } : {}),
        ...(floorJs ? { "floor-js": floorJs.pid } : {}),
      },
      stop: () => stopAll(started),
    };
  } catch (error) {
    await stopAll(started);
    throw error;
  }
}

/** The floor relay (or its JS-stream variant) in front of the given workers. */
export function spawnFloor(
  spec: Pick<ClusterSpec, "name" | "logDir" | "maxHttpRequests"> & { readonly preload?: string },
  contextUrl: string,
  generationUrl: string,
  mode: "native" | "js",
): Promise<Service> {
  return spawnService({
    name: `${spec.name}-floor-${mode}`,
    // `preload`: a module run first (bench/micro/raw-fetch-preload.ts: the legs on the Bun.connect prototype).
    cmd: [
      process.execPath,
      ...(spec.preload === undefined ? [] : ["--preload", spec.preload]),
      join(import.meta.dir, "floor-relay.ts"),
      contextUrl,
      generationUrl,
      mode,
    ],
    env: { BUN_CONFIG_MAX_HTTP_REQUESTS: String(spec.maxHttpRequests) },
    logDir: spec.logDir,
  });
}

/** The compiled binary, or `bun --cpu-prof src/main.ts` when profiling (the binary carries no profiler flag). */
function proxyCommand(spec: ClusterSpec): string[] {
  if (spec.profileDir === undefined) return [spec.binary];
  return [process.execPath, "--cpu-prof", "--cpu-prof-dir", spec.profileDir, join(spec.root, "src", "main.ts")];
}

export async function waitReady(url: string): Promise<void> {
  const deadline = performance.now() + READY_TIMEOUT_MS;
  while (performance.now() < deadline) {
    const status = await fetch(`${url}/health`, { headers: { connection: "close" } }).then(
      (r) => r.status,
      () => 0,
    );
    if (status === 200) return;
    await Bun.sleep(20);
  }
  throw new Error(`The proxy at ${url} did not become ready`);
}

/** The proxy first, so it never sees its workers vanish under live requests. */
export async function stopAll(services: readonly Service[]): Promise<void> {
  for (const service of [...services].reverse()) await service.stop();
}
