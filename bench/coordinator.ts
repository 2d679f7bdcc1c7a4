/**
 * `bun bench/coordinator.ts [conversations]`: issue #36's comparison. The multi-turn
 * conversations of scenario (f) (the same script and workers: prefill charged per uncached
 * token, a KV cache of 2–3 conversations per worker), `conversation` routers, placed by
 *
 * 1. one proxy;
 * 2. three replicas, each on its own routers;
 * 3. three replicas and one `disagg-proxy coordinator`;
 *
 * each replica on its own loopback address (127.0.0.2, .3, .4), the client sending each turn to
 * the next replica in turn (a round-robin balancer). Every process is fresh per setup. Figures:
 * the context workers' KV cache hit ratio and uncached prefill tokens (GET /emulator/prefill),
 * per-worker in flight (GET /emulator/running sampled every 20 ms: mean per worker, max ÷ min),
 * TTFT, and the placement's time per request from the replicas' request lines (placement_us:
 * both legs' /select round trips). Prints a Markdown table; about a minute.
 */

import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { HttpConnection } from "./http/connection.ts";
import { postRequest } from "./http/exchange.ts";
import { chatTurn } from "./load/chat-turn.ts";
import { systemPrompt, turnBody, userMessage, type ChatMessage, type ConversationShape } from "./load/conversation-script.ts";
import { endpointOf, type Endpoint } from "./load/paths.ts";
import { disaggConfig } from "./cluster/fleet.ts";
import { spawnService, type Service } from "./cluster/service.ts";
import { summarize } from "./lib/stats.ts";
import { encodeFinishRequest, encodeSelectRequest, MSGPACK_CONTENT_TYPE } from "../src/routing/coordinator-wire.ts";

const ROOT = join(import.meta.dir, "..");
const LOGS = join(ROOT, "bench", "out", "logs", "coordinator");
const CONVERSATIONS = Number(process.argv[2] ?? 40);
const TURNS = 8;
const USERS = 8;
const WORKERS = 4;
const SHAPE: ConversationShape = { systemTokens: 128, userTokens: 256, replyTokens: 32 };
const WORKER_FLAGS = [
  "--prefill-ms-per-token",
  "0.05",
  "--token-ms",
  "1",
  "--tokens-per-block",
  "16",
  "--kv-cache-blocks",
  "512",
  "--max-records",
  "1000",
];
const REPLICA_HOSTS = ["127.0.0.2", "127.0.0.3", "127.0.0.4"];
const SAMPLE_MS = 20;

type Router = "conversation" | "kv_cache_aware";

interface Setup {
  readonly name: string;
  readonly router: Router;
  readonly replicas: number;
  readonly coordinator: boolean;
}

const SETUPS: readonly Setup[] = (["conversation", "kv_cache_aware"] as const).flatMap((router) => [
  { name: "one proxy", router, replicas: 1, coordinator: false },
  { name: "three replicas, local routers", router, replicas: 3, coordinator: false },
  { name: "three replicas + coordinator", router, replicas: 3, coordinator: true },
]);

interface Run {
  readonly setup: Setup;
  readonly turns: number;
  readonly errors: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
  readonly meanInFlight: readonly number[];
  readonly ttftMs: number;
  readonly placementUs: readonly number[];
  /** /select + /finish round trips asked of the coordinator by the load generator after the load, µs. */
  readonly idleSelectUs: readonly number[];
  readonly seconds: number;
}

function bunProcess(name: string, args: readonly string[]): Promise<Service> {
  return spawnService({ name, logDir: LOGS, cwd: ROOT, cmd: ["bun", "src/main.ts", ...args] });
}

async function ready(url: string): Promise<void> {
  for (let attempt = 0; attempt < 600; attempt++) {
    if ((await fetch(`${url}/health`).catch(() => undefined))?.status === 200) return;
    await Bun.sleep(25);
  }
  throw new Error(`${url} never became ready`);
}

async function runSetup(setup: Setup): Promise<Run> {
  const started: Service[] = [];
  try {
    const tag = `${setup.router}-${setup.name}`.replaceAll(/[^a-z]+/g, "-");
    const spawn = async (name: string, args: readonly string[]): Promise<Service> => {
      const service = await bunProcess(`${tag}-${name}`, args);
      started.push(service);
      return service;
    };
    const workers = (role: "context" | "generation"): Promise<Service[]> =>
      Promise.all(
        Array.from({ length: WORKERS }, (_, i) => spawn(`${role}${i}`, ["worker", "--role", role, "--port", "0", ...WORKER_FLAGS])),
      );
    const [context, generation] = await Promise.all([workers("context"), workers("generation")]);
    const spec = {
      name: tag,
      tokensPerBlock: 16,
      maxLocalPrefillLength: undefined,
      contextRouter: "conversation",
      generationRouter: "conversation",
    } as const;
    const yaml = join(LOGS, `${tag}.yaml`);
    mkdirSync(LOGS, { recursive: true });
    writeFileSync(
      yaml,
      disaggConfig(
        { ...spec, binary: "", logDir: LOGS, contextWorkers: WORKERS, generationWorkers: WORKERS, workerFlags: [], maxHttpRequests: 4096 },
        context,
        generation,
      ),
    );
    const coordinator = setup.coordinator
      ? await spawn("coordinator", ["coordinator", "-c", yaml, "--host", "127.0.0.1", "--port", "0", "--log-level", "warn"])
      : undefined;
    if (coordinator !== undefined) await ready(coordinator.url);
    const replicas = await Promise.all(
      REPLICA_HOSTS.slice(0, setup.replicas).map((host, i) =>
        spawn(`replica${i}`, [
          "serve",
          "-c",
          yaml,
          "--host",
          host,
          "--port",
          "0",
          "--node-id",
          String(10 + i),
          "--no-dashboard",
          ...(coordinator === undefined ? [] : ["--disagg-coordinator-url", coordinator.url]),
        ]),
      ),
    );
    await Promise.all(replicas.map((replica) => ready(replica.url)));
    const sampling = sampleInFlight([...context, ...generation]);
    const outcome = await playConversations(replicas.map((replica) => endpointOf(replica.url)));
    const meanInFlight = await sampling.stop();
    const tallies = await Promise.all(
      context.map(
        async (worker) =>
          (await (await fetch(`${worker.url}/emulator/prefill`)).json()) as { context: { prompt_tokens: number; cached_tokens: number } },
      ),
    );
    const placementUs = replicas.flatMap((replica) => placementOf(replica.logFile));
    const idleSelectUs = coordinator === undefined ? [] : await selectRoundTrips(coordinator.url, 200);
    return {
      setup,
      ...outcome,
      promptTokens: tallies.reduce((sum, t) => sum + t.context.prompt_tokens, 0),
      cachedTokens: tallies.reduce((sum, t) => sum + t.context.cached_tokens, 0),
      meanInFlight,
      placementUs,
      idleSelectUs,
    };
  } finally {
    await Promise.all(started.map((service) => service.stop()));
  }
}

/** The users play the conversations; each turn goes to the next replica in turn. */
async function playConversations(
  replicas: readonly Endpoint[],
): Promise<{ turns: number; errors: number; ttftMs: number; seconds: number }> {
  let nextConversation = 0;
  let nextReplica = 0;
  let errors = 0;
  const ttfts: number[] = [];
  const user = async (): Promise<void> => {
    const connections = await Promise.all(replicas.map((replica) => HttpConnection.open(replica.hostname, replica.port)));
    try {
      for (let conversation = nextConversation++; conversation < CONVERSATIONS; conversation = nextConversation++) {
        const history: ChatMessage[] = [systemPrompt(SHAPE)];
        for (let turn = 0; turn < TURNS; turn++) {
          history.push(userMessage(SHAPE, conversation, turn));
          const index = nextReplica++ % replicas.length;
          const replica = replicas[index];
          let conn = connections[index];
          if (replica === undefined || conn === undefined) throw new Error("no replica");
          // oxlint-disable-next-line no-await-in-loop -- a closed connection is opened again before the turn
          if (conn.closed) connections[index] = conn = await HttpConnection.open(replica.hostname, replica.port);
          const request = postRequest(
            replica.host,
            "/v1/chat/completions",
            JSON.stringify(turnBody(SHAPE, `bench-conversation-${conversation}`, history)),
          );
          // oxlint-disable-next-line no-await-in-loop -- each turn carries the answer of the one before
          const answer = await chatTurn(conn, request);
          if (answer.status !== 200 || !answer.done || answer.ttftMs === undefined) {
            errors++;
            break;
          }
          ttfts.push(answer.ttftMs);
          history.push({ role: "assistant", content: answer.content.trim() });
        }
      }
    } finally {
      for (const conn of connections) conn.close();
    }
  };
  const startedAt = performance.now();
  await Promise.all(Array.from({ length: USERS }, user));
  return { turns: ttfts.length, errors, ttftMs: summarize(ttfts).mean, seconds: (performance.now() - startedAt) / 1000 };
}

/** Samples every worker's model requests running until stopped; the mean per worker. */
function sampleInFlight(workers: readonly Service[]): { stop(): Promise<number[]> } {
  const sums = workers.map(() => 0);
  let samples = 0;
  const state = { running: true };
  const loop = (async () => {
    while (state.running) {
      const counts = await Promise.all(
        workers.map(async (w) => ((await (await fetch(`${w.url}/emulator/running`)).json()) as { running: number }).running),
      );
      counts.forEach((count, i) => (sums[i] = (sums[i] ?? 0) + count));
      samples++;
      await Bun.sleep(SAMPLE_MS);
    }
  })();
  return {
    async stop() {
      state.running = false;
      await loop;
      return sums.map((sum) => sum / Math.max(samples, 1));
    },
  };
}

/** POST /select then /finish, one at a time, as a replica asks: the round trip of each select, µs. */
async function selectRoundTrips(url: string, count: number): Promise<number[]> {
  const times: number[] = [];
  const headers = { "content-type": MSGPACK_CONTENT_TYPE };
  for (let i = 0; i < count; i++) {
    const reqId = (1n << 41n) + BigInt(i);
    const started = performance.now();
    const body = encodeSelectRequest({
      role: "context",
      routingKey: { kind: "conversation", id: `probe-${i}` },
      reqId,
      excludeServer: undefined,
    });
    // oxlint-disable-next-line no-await-in-loop -- one placement at a time, as a lone request makes it
    const answer = await fetch(`${url}/select`, { method: "POST", headers, body });
    // oxlint-disable-next-line no-await-in-loop -- read whole, as the client reads it
    await answer.arrayBuffer();
    times.push((performance.now() - started) * 1000);
    // oxlint-disable-next-line no-await-in-loop -- its finish, so the coordinator holds nothing after
    await (
      await fetch(`${url}/finish`, { method: "POST", headers, body: encodeFinishRequest({ role: "context", reqId, success: true }) })
    ).arrayBuffer();
  }
  return times;
}

/** placement_us of every request line a replica wrote. */
function placementOf(logFile: string): number[] {
  return readFileSync(logFile, "utf8")
    .split("\n")
    .filter((line) => line.includes('"msg":"request"'))
    .map((line) => (JSON.parse(line) as { placement_us?: number }).placement_us)
    .filter((us): us is number => typeof us === "number");
}

function spreadOf(values: readonly number[]): string {
  const min = Math.min(...values);
  return min > 0 ? (Math.max(...values) / min).toFixed(2) : "∞";
}

function report(runs: readonly Run[]): string {
  const rows = runs.map((run) => {
    const hit = run.cachedTokens / run.promptTokens;
    const uncached = run.promptTokens - run.cachedTokens;
    const ctx = run.meanInFlight.slice(0, WORKERS);
    const gen = run.meanInFlight.slice(WORKERS);
    const placement = run.placementUs.length === 0 ? "—" : `${percentileOf(run.placementUs, 0.5)} / ${percentileOf(run.placementUs, 0.99)}`;
    const idle =
      run.idleSelectUs.length === 0
        ? "—"
        : `${percentileOf(run.idleSelectUs, 0.5).toFixed(0)} / ${percentileOf(run.idleSelectUs, 0.99).toFixed(0)}`;
    return `| ${run.setup.router}: ${run.setup.name} | ${(hit * 100).toFixed(1)} % | ${(uncached / 1000).toFixed(1)}k | ${ctx.map((v) => v.toFixed(2)).join(" / ")} (${spreadOf(ctx)}) | ${gen.map((v) => v.toFixed(2)).join(" / ")} (${spreadOf(gen)}) | ${run.ttftMs.toFixed(1)} | ${placement} | ${idle} | ${run.turns} / ${run.errors} |`;
  });
  return [
    `${CONVERSATIONS} conversations × ${TURNS} turns, ${USERS} at a time, ${WORKERS} + ${WORKERS} workers`,
    "",
    "| router: setup | KV cache hit ratio (context) | uncached prefill tokens | context workers in flight, mean (max ÷ min) | generation workers in flight, mean (max ÷ min) | TTFT mean ms | placement µs per request under load, p50 / p99 (two /select) | one /select alone, µs p50 / p99 | turns / errors |",
    "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
    ...rows,
  ].join("\n");
}

function percentileOf(values: readonly number[], p: number): number {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? 0;
}

const runs: Run[] = [];
for (const setup of SETUPS) {
  // oxlint-disable-next-line no-await-in-loop -- one setup at a time, on fresh processes
  const run = await runSetup(setup);
  console.error(`${setup.router}, ${setup.name}: ${run.turns} turns in ${run.seconds.toFixed(1)} s, ${run.errors} errors`);
  runs.push(run);
}
console.log(report(runs));
