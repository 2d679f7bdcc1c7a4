/**
 * Issue #29's question: does a worker client on `Bun.connect` (bench/micro/raw-client.ts) cost
 * less than `fetch` for the proxy's two legs? One process plays the proxy's client side against
 * two emulated workers (separate processes, zero prefill and token latency): a context_only
 * POST whose JSON answer is parsed, then a generation_only POST built from its hand-off whose
 * answer is read whole (non-streamed) or chunk by chunk through a Response body (streamed, as
 * the relay reads it). Both clients do the same body and parse work; only the transport
 * differs. Rounds interleave the two clients (order alternating).
 *
 * Run: `bun bench/micro/worker-client.ts [cpu|first|rss|all]` (≤ 2 min). Figures:
 * - cpu: this process's CPU (user + system, all threads: fetch runs on its own HTTP thread)
 *   per two-leg request, closed loop at 1, 16 and 64 concurrent requests, median of rounds;
 * - first: time from the context POST to the generation answer's first body byte, 16
 *   concurrent streamed requests of 32 tokens paced 2 ms apart, p50/p90;
 * - rss: RSS growth per open generation stream (1,000 streams held silent by the worker after
 *   their first token), each client in a fresh child process.
 */

import { spawnService, type Service } from "../cluster/service.ts";
import { RawClient } from "./raw-client.ts";

type Json = Record<string, unknown>;

interface Client {
  readonly name: string;
  json(url: string, body: string, signal?: AbortSignal): Promise<Json>;
  stream(url: string, body: string, signal?: AbortSignal): Promise<Response>;
}

const JSON_HEADERS = { "content-type": "application/json", accept: "application/json, text/event-stream" };
const LIMIT = 16 * 1024 * 1024;
const decoder = new TextDecoder();

function fetchClient(): Client {
  return {
    name: "fetch",
    async json(url, body, signal) {
      const response = await fetch(url, { method: "POST", headers: JSON_HEADERS, body, ...(signal ? { signal } : {}), timeout: false });
      return JSON.parse(decoder.decode(await response.bytes())) as Json;
    },
    stream: (url, body, signal) =>
      fetch(url, { method: "POST", headers: JSON_HEADERS, body, ...(signal ? { signal } : {}), timeout: false }),
  };
}

function split(url: string): [string, string] {
  const at = url.indexOf("/", 8);
  return [url.slice(0, at), url.slice(at)];
}

function rawClient(): Client {
  const client = new RawClient({ idleMs: 4_000, maxIdle: 1_024 });
  return {
    name: "raw",
    async json(url, body, signal) {
      const [origin, path] = split(url);
      const answer = await client.bytes(
        origin,
        { method: "POST", path, headers: JSON_HEADERS, body, ...(signal ? { signal } : {}) },
        LIMIT,
      );
      return JSON.parse(decoder.decode(answer.body)) as Json;
    },
    stream(url, body, signal) {
      const [origin, path] = split(url);
      return client.stream(origin, { method: "POST", path, headers: JSON_HEADERS, body, ...(signal ? { signal } : {}) });
    },
  };
}

const PROMPT = "Summarise the benefits of disaggregated prefill and decode for large language model serving";
let nextId = 2 ** 41;

function clientBody(tokens: number, stream: boolean, directives = ""): Json {
  return {
    model: "emulated-model",
    messages: [{ role: "user", content: `${PROMPT} [[emu tokens=${tokens} ${directives}]]` }],
    max_tokens: tokens,
    ...(stream ? { stream: true } : {}),
  };
}

/** Context leg, then the generation leg's body (as the floor relay builds it). */
async function contextLeg(client: Client, workers: Workers, body: Json, signal?: AbortSignal): Promise<string> {
  const id = nextId++;
  const contextParams = { request_type: "context_only", disagg_request_id: id, schedule_style: 0 };
  const answer = await client.json(
    `${workers.context}/v1/chat/completions`,
    JSON.stringify({ ...body, stream: false, stream_options: null, disaggregated_params: contextParams }),
    signal,
  );
  const choice = (answer["choices"] as Json[] | undefined)?.[0];
  const handOff = choice?.["disaggregated_params"] as Json | undefined;
  return JSON.stringify({
    ...body,
    disaggregated_params: { ...handOff, request_type: "generation_only", disagg_request_id: id, schedule_style: 0 },
    prompt_token_ids: answer["prompt_token_ids"],
  });
}

async function twoLegJson(client: Client, workers: Workers, body: Json): Promise<void> {
  const generation = await contextLeg(client, workers, body);
  const answer = await client.json(`${workers.generation}/v1/chat/completions`, generation);
  if (!Array.isArray(answer["choices"])) throw new Error(`bad answer ${JSON.stringify(answer).slice(0, 200)}`);
}

/** Streamed: resolves at the first body byte (its time) and when the stream ends. */
async function twoLegStream(
  client: Client,
  workers: Workers,
  body: Json,
  onFirst?: (ms: number) => void,
  signal?: AbortSignal,
): Promise<Reader> {
  const started = performance.now();
  const generation = await contextLeg(client, workers, body, signal);
  const response = await client.stream(`${workers.generation}/v1/chat/completions`, generation, signal);
  if (response.status !== 200 || response.body === null) throw new Error(`stream status ${response.status}`);
  const reader: Reader = response.body.getReader();
  const first = await reader.read();
  if (first.done) throw new Error("empty stream");
  onFirst?.(performance.now() - started);
  return reader;
}

async function drain(reader: Reader): Promise<void> {
  for (;;) {
    // oxlint-disable-next-line no-await-in-loop -- a stream is read in order
    const { done } = await reader.read();
    if (done) return;
  }
}

/** What is read of a generation stream. */
interface Reader {
  read(): Promise<{ done: boolean; value?: Uint8Array | undefined }>;
  cancel(): Promise<void>;
}

interface Workers {
  readonly context: string;
  readonly generation: string;
}

function cpuMicros(): number {
  const usage = process.cpuUsage();
  return usage.user + usage.system;
}

/** Closed loop for `ms`: µs of CPU per completed request. */
async function cpuRound(op: () => Promise<void>, concurrency: number, ms: number): Promise<{ perRequest: number; requests: number }> {
  const until = performance.now() + ms;
  let requests = 0;
  const cpu0 = cpuMicros();
  await Promise.all(
    Array.from({ length: concurrency }, async () => {
      while (performance.now() < until) {
        // oxlint-disable-next-line no-await-in-loop -- a closed loop
        await op();
        requests++;
      }
    }),
  );
  const cpu = cpuMicros() - cpu0;
  return { perRequest: cpu / requests, requests };
}

function median(values: readonly number[]): number {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
}

function quantile(values: readonly number[], q: number): number {
  const sorted = values.toSorted((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? Number.NaN;
}

const ROUNDS = Number(process.env["ROUNDS"] ?? 6);
const ROUND_MS = Number(process.env["ROUND_MS"] ?? 1500);

async function cpuScenario(workers: Workers): Promise<void> {
  const clients = [fetchClient(), rawClient()];
  const json = clientBody(16, false);
  const streamed = clientBody(256, true);
  const cases: { label: string; concurrency: number; op: (c: Client) => Promise<void> }[] = [
    { label: "json c=1", concurrency: 1, op: (c) => twoLegJson(c, workers, json) },
    { label: "json c=16", concurrency: 16, op: (c) => twoLegJson(c, workers, json) },
    { label: "json c=64", concurrency: 64, op: (c) => twoLegJson(c, workers, json) },
    { label: "stream256 c=16", concurrency: 16, op: async (c) => drain(await twoLegStream(c, workers, streamed)) },
  ];
  for (const { label, concurrency, op } of cases) {
    for (const client of clients) await cpuRound(() => op(client), concurrency, 300); // warm
    const per: Record<string, number[]> = { fetch: [], raw: [] };
    const ratios: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? clients : [...clients].reverse();
      const got: Record<string, number> = {};
      for (const client of order) {
        // oxlint-disable-next-line no-await-in-loop -- rounds run one after another
        const { perRequest } = await cpuRound(() => op(client), concurrency, ROUND_MS);
        got[client.name] = perRequest;
        per[client.name]?.push(perRequest);
      }
      ratios.push((got["raw"] ?? 0) / (got["fetch"] ?? 1));
    }
    const f = median(per["fetch"] ?? []);
    const r = median(per["raw"] ?? []);
    console.log(
      `${label}: CPU µs per two-leg request fetch ${f.toFixed(1)}, raw ${r.toFixed(1)}; raw÷fetch median of rounds ${median(ratios).toFixed(3)} (range ${Math.min(...ratios).toFixed(3)}–${Math.max(...ratios).toFixed(3)})`,
    );
  }
}

async function firstScenario(workers: Workers): Promise<void> {
  const clients = [fetchClient(), rawClient()];
  const body = clientBody(32, true, "gen.token_ms=2");
  const times: Record<string, number[]> = { fetch: [], raw: [] };
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? clients : [...clients].reverse();
    for (const client of order) {
      const until = performance.now() + ROUND_MS;
      // oxlint-disable-next-line no-await-in-loop -- rounds run one after another
      await Promise.all(
        Array.from({ length: 16 }, async () => {
          while (performance.now() < until) {
            // oxlint-disable-next-line no-await-in-loop -- a closed loop
            const reader = await twoLegStream(client, workers, body, (ms) => {
              if (round > 0) times[client.name]?.push(ms);
            });
            // oxlint-disable-next-line no-await-in-loop -- a closed loop
            await drain(reader);
          }
        }),
      );
    }
  }
  for (const [name, list] of Object.entries(times)) {
    console.log(
      `first byte, 16 streamed, 32 tokens paced 2 ms, ${name}: p50 ${quantile(list, 0.5).toFixed(3)} ms, p90 ${quantile(list, 0.9).toFixed(3)} ms (${list.length} streams)`,
    );
  }
}

/** In a child: open N silent streams with one client, print RSS growth per stream. */
async function rssChild(workers: Workers, which: string, count: number): Promise<void> {
  const client = which === "raw" ? rawClient() : fetchClient();
  const body = clientBody(8, true, "gen.silence_ms=600000 gen.silence_after=1");
  // Warm the code paths and pools' first use.
  const warm = new AbortController();
  const warmReaders = await Promise.all(Array.from({ length: 8 }, () => twoLegStream(client, workers, body, undefined, warm.signal)));
  warm.abort();
  for (const r of warmReaders) r.cancel().catch(() => undefined);
  await Bun.sleep(200);
  Bun.gc(true);
  const before = process.memoryUsage.rss();
  const controller = new AbortController();
  const readers: Reader[] = [];
  for (let done = 0; done < count; done += 200) {
    // oxlint-disable-next-line no-await-in-loop -- batches keep the SYN burst below the backlog
    readers.push(
      ...(await Promise.all(
        Array.from({ length: Math.min(200, count - done) }, () => twoLegStream(client, workers, body, undefined, controller.signal)),
      )),
    );
  }
  await Bun.sleep(500);
  Bun.gc(true);
  const after = process.memoryUsage.rss();
  console.log(JSON.stringify({ which, count: readers.length, kibPerStream: (after - before) / 1024 / readers.length }));
  controller.abort();
  process.exit(0);
}

async function rssScenario(workers: Workers): Promise<void> {
  const count = Number(process.env["STREAMS"] ?? 1000);
  for (const round of [0, 1]) {
    for (const which of round === 0 ? ["fetch", "raw"] : ["raw", "fetch"]) {
      const child = Bun.spawn(
        [process.execPath, import.meta.path, "rss-child", which, String(count), workers.context, workers.generation],
        {
          stdout: "pipe",
          stderr: "inherit",
          env: { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: "65535" },
        },
      );
      // oxlint-disable-next-line no-await-in-loop -- one child at a time
      const out = await new Response(child.stdout).text();
      // oxlint-disable-next-line no-await-in-loop -- one child at a time
      await child.exited;
      console.log(`rss per open stream (${count} streams): ${out.trim()}`);
    }
  }
}

async function main(): Promise<void> {
  const [mode = "all", ...rest] = process.argv.slice(2);
  if (mode === "rss-child") {
    const [which = "fetch", count = "1000", context = "", generation = ""] = rest;
    await rssChild({ context, generation }, which, Number(count));
    return;
  }
  const services: Service[] = [];
  const root = new URL("../..", import.meta.url).pathname;
  try {
    for (const role of ["context", "generation"]) {
      // oxlint-disable-next-line no-await-in-loop -- two workers
      services.push(
        await spawnService({
          name: `micro-${role}`,
          cmd: [
            process.execPath,
            `${root}src/main.ts`,
            "worker",
            "--role",
            role,
            "--port",
            "0",
            "--host",
            "127.0.0.1",
            "--max-records",
            "1000",
          ],
          logDir: "/tmp/perf-micro-logs",
        }),
      );
    }
    const workers = { context: services[0]?.url ?? "", generation: services[1]?.url ?? "" };
    console.log(`load average at start: ${(await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ")}`);
    if (mode === "cpu" || mode === "all") await cpuScenario(workers);
    if (mode === "first" || mode === "all") await firstScenario(workers);
    if (mode === "rss" || mode === "all") await rssScenario(workers);
    console.log(`load average at end: ${(await Bun.file("/proc/loadavg").text()).split(" ").slice(0, 3).join(" ")}`);
  } finally {
    await Promise.all(services.map((s) => s.stop()));
  }
}

await main();
