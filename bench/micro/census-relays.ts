/**
 * What the heap-census micro-benchmarks share (stream-objects.ts, stream-allocations.ts): two
 * emulated workers, the proxy from source and the floor relay reading its stream in JS, both
 * relays under heap-census.ts, and the census a relay writes when asked.
 */

import { join } from "node:path";
import { waitReady } from "../cluster/cluster.ts";
import { spawnService, type Service, serveArgs } from "../cluster/service.ts";
import { OpenStreams } from "../load/open-streams.ts";
import { endpointOf } from "../load/paths.ts";
import { chatStream } from "../load/workloads.ts";

const ROOT = join(import.meta.dir, "..", "..");
const LOG_DIR = join(ROOT, "bench", "out", "logs");
const HOOK = join(import.meta.dir, "heap-census.ts");

export interface Census {
  readonly heapSize: number;
  readonly heapCapacity: number;
  readonly extraMemorySize: number;
  readonly counts: Readonly<Record<string, number>>;
}

export interface CensusRelays {
  readonly proxy: Service;
  readonly floor: Service;
}

/** Starts the workers and both relays, named `prefix-…`; every service started goes into `services`, for the caller to stop. */
export async function startCensusRelays(prefix: string, env: Record<string, string>, services: Service[]): Promise<CensusRelays> {
  const start = async (name: string, cmd: string[], withEnv?: Record<string, string>): Promise<Service> => {
    const service = await spawnService({
      name: `${prefix}-${name}`,
      cmd,
      logDir: LOG_DIR,
      ...(withEnv === undefined ? {} : { env: withEnv }),
    });
    services.push(service);
    return service;
  };
  const worker = (role: string): Promise<Service> =>
    start(role, [process.execPath, join(ROOT, "src", "main.ts"), "worker", "--role", role, "--port", "0", "--host", "127.0.0.1"]);
  const context = await worker("context");
  const generation = await worker("generation");
  const proxy = await start(
    "proxy",
    [process.execPath, "--preload", HOOK, join(ROOT, "src", "main.ts"), ...serveArgs(context.url, generation.url)],
    env,
  );
  await waitReady(proxy.url);
  const floor = await start(
    "floor-js",
    [process.execPath, "--preload", HOOK, join(ROOT, "bench", "cluster", "floor-relay.ts"), context.url, generation.url, "js"],
    env,
  );
  return { proxy, floor };
}

/** The relay's `seen`-th census (0 the first), asked for with SIGUSR2 and read from its stderr. */
export async function census(service: Service, seen: number): Promise<Census> {
  process.kill(service.pid, "SIGUSR2");
  const errFile = service.logFile.replace(/\.log$/, ".err");
  for (let waited = 0; waited < 10_000; waited += 50) {
    const lines = (await Bun.file(errFile).text()).split("\n").filter((line) => line.startsWith("CENSUS "));
    if (lines.length > seen) return JSON.parse((lines[seen] ?? "").slice("CENSUS ".length)) as Census;
    await Bun.sleep(50);
  }
  throw new Error(`${service.name} wrote no heap census`);
}

/** Warms a relay up (its code compiled, its pools filled) with `streams` short streams, then lets their ends run for `settleMs`. */
export async function warmUp(service: Service, streams: number, settleMs: number): Promise<void> {
  const warm = new OpenStreams(endpointOf(service.url), chatStream(4));
  await warm.growTo(streams);
  await warm.waitFor(4, 10_000);
  warm.closeAll();
  await Bun.sleep(settleMs);
}
