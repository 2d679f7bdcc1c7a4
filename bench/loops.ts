/**
 * `bun bench/loops.ts BINARY [--loops 1,2,4] [--clients 64] [--rounds 3] [--seconds 3] [--stream-requests 400]`:
 * issue #29, num_workers. The same proxy binary run with 1, 2 and 4 event loops
 * (`--num-workers`) on the same two emulated workers, in rotating rounds of a closed loop:
 * non-streamed chat of 16 tokens (requests/s, the proxy's CPU per request), then streamed chat
 * of 256 tokens (SSE events/s). Each proxy is its own process; their rounds take turns, so all
 * see the same machine. On a host whose cores the workers and the load generator already
 * use, more loops cannot show more throughput: the report says how busy the machine was.
 */

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { stopAll, waitReady } from "./cluster/cluster.ts";
import { spawnService, type Service, serveArgs } from "./cluster/service.ts";
import { alternateRounds, foreignLoad, medianCpuPerRequest } from "./load/ab-rounds.ts";
import { endpointOf, proxyPath, type Path, type Workload } from "./load/paths.ts";
import { chatJson, chatStream } from "./load/workloads.ts";

const LOG_DIR = join(import.meta.dir, "out", "logs");

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    args: Bun.argv.slice(2),
    allowPositionals: true,
    options: {
      loops: { type: "string", default: "1,2,4" },
      clients: { type: "string", default: "64" },
      rounds: { type: "string", default: "3" },
      seconds: { type: "string", default: "3" },
      "stream-requests": { type: "string", default: "400" },
    },
  });
  const [binary] = positionals;
  if (binary === undefined)
    throw new Error("usage: bun bench/loops.ts BINARY [--loops 1,2,4] [--clients 64] [--rounds 3] [--seconds 3] [--stream-requests 400]");
  mkdirSync(LOG_DIR, { recursive: true });
  const services: Service[] = [];
  try {
    const worker = async (role: string): Promise<Service> => {
      const service = await spawnService({
        name: `loops-${role}`,
        cmd: [binary, "worker", "--role", role, "--port", "0", "--host", "127.0.0.1", "--max-records", "1000"],
        logDir: LOG_DIR,
      });
      services.push(service);
      return service;
    };
    const context = await worker("context");
    const generation = await worker("generation");
    const counts = values.loops.split(",").map(Number);
    const proxies: Record<string, Service> = {};
    for (const n of counts) {
      const cmd = [binary, ...serveArgs(context.url, generation.url), "--num-workers", String(n), "--log-level", "warn"];
      const service = await spawnService({ name: `loops-${n}`, cmd, env: { BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" }, logDir: LOG_DIR });
      services.push(service);
      await waitReady(service.url);
      // Let every extra loop join the port (each after its own health checks).
      await Bun.sleep(1000);
      proxies[`loops${n}`] = service;
    }
    const pids: Record<string, number> = { context: context.pid, generation: generation.pid };
    for (const [name, service] of Object.entries(proxies)) pids[name] = service.pid;
    const clients = Number(values.clients);
    const run = async (workload: Workload, round: { seconds: number; requests?: number }): Promise<void> => {
      const users = Object.fromEntries(
        Object.entries(proxies).map(([name, service]) => [name, paths(service, workload, clients)]),
      ) as Record<string, Path[]>;
      const tally = await alternateRounds(pids, users, { warmup: { seconds: 1, requests: 2000 }, rounds: Number(values.rounds), round });
      for (const list of Object.values(users)) for (const path of list) path.close();
      for (const name of Object.keys(proxies)) {
        const t = tally[name];
        if (t === undefined) continue;
        const cpu = medianCpuPerRequest(t, name, 1e6);
        const busy = ((t.cpu[name] ?? 0) / t.seconds) * 100;
        process.stdout.write(
          `| ${name.slice(5)} | ${(t.ok / t.seconds).toFixed(0)} | ${(t.frames / t.seconds).toFixed(0)} | ${cpu.toFixed(0)} | ${busy.toFixed(0)} % | ${t.errors} | ${(foreignLoad(t, 2) * 100).toFixed(0)} % |\n`,
        );
      }
    };
    const header =
      "| loops | requests/s | SSE events/s | proxy CPU µs per request | proxy CPU (100 % = one core) | errors | other load |\n| --- | --- | --- | --- | --- | --- | --- |\n";
    process.stdout.write(
      `load average at start: ${(await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ")}\n\nnon-streamed chat, 16 tokens, ${clients} clients:\n\n${header}`,
    );
    await run(chatJson(16), { seconds: Number(values.seconds) });
    process.stdout.write(`\nstreamed chat, 256 tokens, ${clients} clients:\n\n${header}`);
    await run(chatStream(256), { seconds: 60, requests: Number(values["stream-requests"]) });
    process.stdout.write(`\nload average at end: ${(await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ")}\n`);
  } finally {
    await stopAll(services);
  }
}

function paths(service: Service, workload: Workload, clients: number): Path[] {
  return Array.from({ length: clients }, () => proxyPath(endpointOf(service.url), workload));
}

await main();
