/**
 * `bun bench/compare.ts BASE_BINARY NEW_BINARY [--clients 1,16,64] [--rounds 8] [--seconds 2] [--stream]`:
 * what one change to the proxy bought. Two proxies built from the two commits run on the same
 * two emulated workers, with the floor relay beside them, in rotating rounds of the latency
 * scenario's closed loop (non-streamed chat of 16 tokens; `--stream`: streamed chat of 256).
 * Prints each proxy's CPU per request (median over rounds) and the new one over the base.
 * The table in bench/README.md ("What each change bought") comes from this.
 */

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { spawnFloor, stopAll, waitReady } from "./cluster/cluster.ts";
import { spawnService, type Service } from "./cluster/service.ts";
import { alternateRounds, medianCpuPerRequest } from "./load/ab-rounds.ts";
import { median, summarize } from "./lib/stats.ts";
import { endpointOf, proxyPath, type Path } from "./load/paths.ts";
import { chatJson, chatStream } from "./load/workloads.ts";

const LOG_DIR = join(import.meta.dir, "out", "logs");

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    args: Bun.argv.slice(2),
    allowPositionals: true,
    options: {
      clients: { type: "string", default: "1,16,64" },
      rounds: { type: "string", default: "8" },
      seconds: { type: "string", default: "2" },
      stream: { type: "boolean", default: false },
    },
  });
  const [base, next] = positionals;
  if (base === undefined || next === undefined) throw new Error("usage: bun bench/compare.ts BASE_BINARY NEW_BINARY [--clients 1,16,64] [--rounds 8] [--seconds 2] [--stream]");
  mkdirSync(LOG_DIR, { recursive: true });
  const services: Service[] = [];
  try {
    const worker = async (role: string): Promise<Service> => {
      const service = await spawnService({ name: `compare-${role}`, cmd: [base, "worker", "--role", role, "--port", "0", "--host", "127.0.0.1", "--max-records", "1000"], logDir: LOG_DIR });
      services.push(service);
      return service;
    };
    const context = await worker("context");
    const generation = await worker("generation");
    const proxy = async (name: string, binary: string): Promise<Service> => {
      const cmd = [binary, "serve", "--port", "0", "--host", "127.0.0.1", "--context", context.url, "--generation", generation.url];
      const service = await spawnService({ name: `compare-${name}`, cmd, env: { BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" }, logDir: LOG_DIR });
      services.push(service);
      await waitReady(service.url);
      return service;
    };
    const relays = { base: await proxy("base", base), next: await proxy("next", next), floor: await spawnFloor({ name: "compare", logDir: LOG_DIR, maxHttpRequests: 4096 }, context.url, generation.url, "native") };
    services.push(relays.floor);
    const pids = { base: relays.base.pid, next: relays.next.pid, floor: relays.floor.pid, context: context.pid, generation: generation.pid };
    const workload = values.stream ? chatStream(256) : chatJson(16);
    process.stdout.write(`| clients | base µs/req | new µs/req | new ÷ base (median of per-round ratios) | floor µs/req | base ÷ floor | new ÷ floor | p50 µs base / new / floor |\n| --- | --- | --- | --- | --- | --- | --- | --- |\n`);
    for (const clients of values.clients.split(",").map(Number)) {
      const users = {
        base: paths(relays.base, workload, clients),
        next: paths(relays.next, workload, clients),
        floor: paths(relays.floor, workload, clients),
      };
      const round = values.stream ? { seconds: 60, requests: 400 } : { seconds: Number(values.seconds) };
      const tally = await alternateRounds(pids, users, { warmup: { seconds: 1, requests: 2000 }, rounds: Number(values.rounds), round });
      for (const list of Object.values(users)) for (const path of list) path.close();
      const cpu = (name: "base" | "next" | "floor"): number => medianCpuPerRequest(tally[name], name, 1e6);
      const p50 = (name: "base" | "next" | "floor"): string => summarize(tally[name].latenciesUs).p50.toFixed(0);
      const [b, n, f] = [cpu("base"), cpu("next"), cpu("floor")];
      // Rounds of one index ran back to back: the median of their ratios cancels slow drifts of other load.
      const perRound = (name: "base" | "next" | "floor"): number[] => tally[name].rounds.map((r) => (r.ok === 0 ? Number.NaN : (r.cpu[name] ?? 0) / r.ok));
      const ratio = median(perRound("next").map((x, i) => x / (perRound("base")[i] ?? Number.NaN)).filter(Number.isFinite));
      process.stdout.write(`| ${clients} | ${b.toFixed(0)} | ${n.toFixed(0)} | ${ratio.toFixed(3)} | ${f.toFixed(0)} | ${(b / f).toFixed(2)} | ${(n / f).toFixed(2)} | ${p50("base")} / ${p50("next")} / ${p50("floor")} |\n`);
    }
  } finally {
    await stopAll(services);
  }
}

function paths(service: Service, workload: ReturnType<typeof chatJson>, clients: number): Path[] {
  return Array.from({ length: clients }, () => proxyPath(endpointOf(service.url), workload));
}

await main();
