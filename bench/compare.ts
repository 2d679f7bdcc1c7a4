/**
 * `bun bench/compare.ts BASE_BINARY NEW_BINARY [--clients 1,16,64] [--rounds 8] [--seconds 2] [--stream | --first-event [--paced TOKENS,MS,PER_CLIENT]] [--floor-raw]`:
 * what one change to the proxy bought. Two proxies built from the two commits run on the same
 * two emulated workers, with the floor relay beside them, in rotating rounds of the latency
 * scenario's closed loop (non-streamed chat of 16 tokens; `--stream`: streamed chat of 256).
 * Prints each proxy's CPU per request (median over rounds) and the new one over the base.
 * The table in bench/README.md ("What each change bought") comes from this.
 *
 * `--first-event`: streamed chat of 32 tokens paced 2 ms apart by the generation worker (the
 * streaming scenario's first-event rounds), 40 requests per client per round (`--paced 128,5,10`:
 * 128 tokens 5 ms apart, 10 requests per client per round: streams paced as a model decodes); prints the time
 * to first event too. `--floor-raw`: a second floor whose two legs go through the `Bun.connect`
 * prototype (bench/micro/raw-client.ts, preloaded) instead of fetch, in the same rounds
 * (issue #29: the floor measured with both clients). A "binary" may be a script that execs
 * `bun src/main.ts` (with `--preload bench/micro/raw-fetch-preload.ts` for the proxy on the
 * prototype).
 */

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { parseArgs } from "node:util";
import { spawnFloor, stopAll, waitReady } from "./cluster/cluster.ts";
import { spawnService, type Service, serveArgs } from "./cluster/service.ts";
import { alternateRounds, medianCpuPerRequest } from "./load/ab-rounds.ts";
import { median, summarize } from "./lib/stats.ts";
import { endpointOf, proxyPath, type Path } from "./load/paths.ts";
import { agentChat, chatJson, chatStream } from "./load/workloads.ts";

const LOG_DIR = join(import.meta.dir, "out", "logs");

/** An emulated worker of the comparison: the same flags under either binary. */
const workerArgs = (role: string): string[] => ["worker", "--role", role, "--port", "0", "--host", "127.0.0.1", "--max-records", "1000"];

async function main(): Promise<void> {
  const { values, positionals } = parseArgs({
    args: Bun.argv.slice(2),
    allowPositionals: true,
    options: {
      clients: { type: "string", default: "1,16,64" },
      rounds: { type: "string", default: "8" },
      seconds: { type: "string", default: "2" },
      stream: { type: "boolean", default: false },
      "first-event": { type: "boolean", default: false },
      paced: { type: "string", default: "32,2,40" },
      "floor-raw": { type: "boolean", default: false },
      agent: { type: "string", default: "0" },
    },
  });
  const [base, next] = positionals;
  if (base === undefined || next === undefined)
    throw new Error(
      "usage: bun bench/compare.ts BASE_BINARY NEW_BINARY [--clients 1,16,64] [--rounds 8] [--seconds 2] [--stream] [--agent KB]",
    );
  mkdirSync(LOG_DIR, { recursive: true });
  const agentKb = Number(values.agent);
  const services: Service[] = [];
  try {
    const worker = async (role: string): Promise<Service> => {
      const service = await spawnService({
        name: `compare-${role}`,
        // Agent rounds (issue #37): both proxies' workers from the new binary, whose context answer carries floor(bytes / 4) ids.
        cmd: agentKb > 0 ? [next, ...workerArgs(role), "--bytes-per-token", "4"] : [base, ...workerArgs(role)],
        logDir: LOG_DIR,
      });
      services.push(service);
      return service;
    };
    const context = await worker("context");
    const generation = await worker("generation");
    const proxy = async (name: string, binary: string): Promise<Service> => {
      const cmd = [binary, ...serveArgs(context.url, generation.url)];
      const service = await spawnService({ name: `compare-${name}`, cmd, env: { BUN_CONFIG_MAX_HTTP_REQUESTS: "4096" }, logDir: LOG_DIR });
      services.push(service);
      await waitReady(service.url);
      return service;
    };
    const floorSpec = { name: "compare", logDir: LOG_DIR, maxHttpRequests: 4096 };
    const floor = await spawnFloor(floorSpec, context.url, generation.url, "native");
    services.push(floor);
    const floorRaw = values["floor-raw"]
      ? await spawnFloor(
          { ...floorSpec, name: "compare-raw", preload: join(import.meta.dir, "micro", "raw-fetch-preload.ts") },
          context.url,
          generation.url,
          "native",
        )
      : undefined;
    if (floorRaw !== undefined) services.push(floorRaw);
    const relays: Record<Relay, Service | undefined> = {
      base: await proxy("base", base),
      next: await proxy("next", next),
      floor,
      floorRaw,
    };
    const present = (Object.keys(relays) as Relay[]).filter((name) => relays[name] !== undefined);
    const pids: Record<string, number> = { context: context.pid, generation: generation.pid };
    for (const name of present) pids[name] = relays[name]?.pid ?? 0;
    const firstEvent = values["first-event"];
    const [tokens = 32, tokenMs = 2, perClient = 40] = values.paced.split(",").map(Number);
    const workload =
      agentKb > 0
        ? agentChat(agentKb, 64)
        : firstEvent
          ? chatStream(tokens, `gen.token_ms=${tokenMs}`)
          : values.stream
            ? chatStream(256)
            : chatJson(16);
    const rawColumns = floorRaw === undefined ? "" : " floor on the prototype µs/req | base ÷ that floor | new ÷ that floor |";
    const p50Names = present.join(" / ");
    process.stdout.write(
      `| clients | base µs/req | new µs/req | new ÷ base (median of per-round ratios) | floor µs/req | base ÷ floor | new ÷ floor |${rawColumns} p50 µs ${p50Names} |${firstEvent ? ` first event p50 µs ${p50Names} |` : ""}\n`,
    );
    for (const clients of values.clients.split(",").map(Number)) {
      const users = Object.fromEntries(present.map((name) => [name, paths(relays[name] as Service, workload, clients)])) as Record<
        Relay,
        Path[]
      >;
      const round = firstEvent
        ? { seconds: 120, requests: perClient * clients }
        : values.stream
          ? { seconds: 60, requests: 400 }
          : { seconds: Number(values.seconds) };
      const tally = await alternateRounds(pids, users, { warmup: { seconds: 1, requests: 2000 }, rounds: Number(values.rounds), round });
      for (const list of Object.values<Path[]>(users)) for (const path of list) path.close();
      const cpu = (name: Relay): number => medianCpuPerRequest(tally[name], name, 1e6);
      const p50 = (name: Relay): string => summarize(tally[name].latenciesUs).p50.toFixed(0);
      const first = (name: Relay): string => summarize(tally[name].firstEventUs).p50.toFixed(0);
      const [b, n, f] = [cpu("base"), cpu("next"), cpu("floor")];
      // Rounds of one index ran back to back: the median of their ratios cancels slow drifts of other load.
      const perRound = (name: Relay): number[] => tally[name].rounds.map((r) => (r.ok === 0 ? Number.NaN : (r.cpu[name] ?? 0) / r.ok));
      const ratio = median(
        perRound("next")
          .map((x, i) => x / (perRound("base")[i] ?? Number.NaN))
          .filter(Number.isFinite),
      );
      const fr = floorRaw === undefined ? undefined : cpu("floorRaw");
      const rawCells = fr === undefined ? "" : ` ${fr.toFixed(0)} | ${(b / fr).toFixed(2)} | ${(n / fr).toFixed(2)} |`;
      const firstCells = firstEvent ? ` ${present.map(first).join(" / ")} |` : "";
      process.stdout.write(
        `| ${clients} | ${b.toFixed(0)} | ${n.toFixed(0)} | ${ratio.toFixed(3)} | ${f.toFixed(0)} | ${(b / f).toFixed(2)} | ${(n / f).toFixed(2)} |${rawCells} ${present.map(p50).join(" / ")} |${firstCells}\n`,
      );
    }
  } finally {
    await stopAll(services);
  }
}

type Relay = "base" | "next" | "floor" | "floorRaw";

function paths(service: Service, workload: ReturnType<typeof chatJson>, clients: number): Path[] {
  return Array.from({ length: clients }, () => proxyPath(endpointOf(service.url), workload));
}

await main();
