/**
 * `bun bench/replicas.ts [seconds per mode]`: two proxy replicas in front of the same workers,
 * with skewed traffic, and how evenly the workers end up loaded.
 *
 * Four emulated generation workers (30 output tokens at 10 ms each: a request stays about
 * 300 ms in flight on its generation worker) and one context worker (no latency), each its own
 * process; two proxies (`load_balancing` for both roles), each its own process. Replica A gets
 * 6 closed-loop clients, replica B 2: three times B's traffic. Every 25 ms the load generator
 * reads each generation worker's model requests in progress (`GET /emulator/running`). Per
 * mode: each worker's mean in flight over the run, their max ÷ min, and the mean over samples
 * of the instantaneous max − min. Modes: the proxies' own counts only, then the workers'
 * reports read every 250, 100 and 25 ms (`--worker-load-interval-ms`). Writes
 * bench/replicas.svg (mean in flight per worker, per mode) and prints the table.
 */

import { mkdirSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { spawnService, type Service, serveArgs } from "./cluster/service.ts";
import { lineChart } from "./report/svg-chart.ts";

const ROOT = join(import.meta.dir, "..");
const LOGS = join(ROOT, "bench", "out", "logs", "replicas");
const SECONDS = Number(process.argv[2] ?? 15);
const SAMPLE_MS = 25;
const CLIENTS = { a: 6, b: 2 } as const;
const MODES: readonly { name: string; intervalMs: number }[] = [
  { name: "own counts", intervalMs: 0 },
  { name: "reports every 250 ms", intervalMs: 250 },
  { name: "reports every 100 ms", intervalMs: 100 },
  { name: "reports every 25 ms", intervalMs: 25 },
];
const BODY = JSON.stringify({ model: "m", messages: [{ role: "user", content: "two replicas, one fleet" }], max_tokens: 30 });

interface ModeResult {
  readonly name: string;
  readonly meanInFlight: readonly number[];
  readonly spread: number;
  readonly meanGap: number;
  readonly requests: { readonly a: number; readonly b: number };
}

function worker(name: string, role: "context" | "generation", extra: readonly string[]): Promise<Service> {
  return spawnService({
    name,
    logDir: LOGS,
    cwd: ROOT,
    cmd: ["bun", "src/main.ts", "worker", "--role", role, "--port", "0", "--model", "m", ...extra],
  });
}

function proxy(name: string, context: Service, generation: readonly Service[], intervalMs: number): Promise<Service> {
  const cmd = ["bun", "src/main.ts", ...serveArgs(context.url, generation.map((g) => g.url).join(","))];
  cmd.push(
    "--context-router",
    "load_balancing",
    "--generation-router",
    "load_balancing",
    "--log-level",
    "warn",
    "--no-dashboard",
    "--worker-load-interval-ms",
    String(intervalMs),
  );
  return spawnService({ name, logDir: LOGS, cwd: ROOT, cmd });
}

async function ready(url: string): Promise<void> {
  for (let attempt = 0; attempt < 400; attempt++) {
    if ((await fetch(`${url}/health`).catch(() => undefined))?.status === 200) return;
    await Bun.sleep(25);
  }
  throw new Error(`${url} never became ready`);
}

/** One closed-loop client until the deadline: the number of requests it completed. */
async function client(url: string, until: number): Promise<number> {
  let done = 0;
  while (performance.now() < until) {
    const response = await fetch(`${url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: BODY,
    });
    await response.arrayBuffer();
    if (response.status === 200) done++;
  }
  return done;
}

async function running(generation: readonly Service[]): Promise<number[]> {
  return Promise.all(
    generation.map(async (g) => ((await (await fetch(`${g.url}/emulator/running`)).json()) as { running: number }).running),
  );
}

async function runMode(mode: { name: string; intervalMs: number }, context: Service, generation: readonly Service[]): Promise<ModeResult> {
  const a = await proxy("proxy-a", context, generation, mode.intervalMs);
  const b = await proxy("proxy-b", context, generation, mode.intervalMs);
  try {
    await Promise.all([ready(a.url), ready(b.url)]);
    // Let each replica read a first report before traffic starts.
    await Bun.sleep(Math.max(mode.intervalMs * 2, 100));
    const until = performance.now() + SECONDS * 1000;
    const clients = [
      ...Array.from({ length: CLIENTS.a }, () => client(a.url, until)),
      ...Array.from({ length: CLIENTS.b }, () => client(b.url, until)),
    ];
    const samples: number[][] = [];
    while (performance.now() < until) {
      samples.push(await running(generation));
      await Bun.sleep(SAMPLE_MS);
    }
    const counts = await Promise.all(clients);
    const meanInFlight = generation.map((_, i) => samples.reduce((sum, sample) => sum + (sample[i] ?? 0), 0) / samples.length);
    const meanGap = samples.reduce((sum, sample) => sum + Math.max(...sample) - Math.min(...sample), 0) / samples.length;
    const sum = (from: number, to: number): number => counts.slice(from, to).reduce((total, n) => total + n, 0);
    return {
      name: mode.name,
      meanInFlight,
      spread: Math.max(...meanInFlight) / Math.min(...meanInFlight),
      meanGap,
      requests: { a: sum(0, CLIENTS.a), b: sum(CLIENTS.a, counts.length) },
    };
  } finally {
    await Promise.all([a.stop(), b.stop()]);
  }
}

mkdirSync(LOGS, { recursive: true });
const context = await worker("ctx", "context", []);
const generation = await Promise.all(
  [0, 1, 2, 3].map((i) => worker(`gen-${i}`, "generation", ["--token-ms", "10", "--output-tokens", "30"])),
);
const results: ModeResult[] = [];
try {
  for (const mode of MODES) {
    results.push(await runMode(mode, context, generation));
    console.error(JSON.stringify(results.at(-1)));
  }
} finally {
  await Promise.all([context, ...generation].map((service) => service.stop()));
}

const palette = ["#d62728", "#ff7f0e", "#2ca02c", "#1f77b4"];
writeFileSync(
  join(ROOT, "bench", "replicas.svg"),
  lineChart({
    title: "Two replicas (3:1 traffic), four generation workers",
    xLabel: "generation worker",
    yLabel: "mean requests in flight",
    xScale: "linear",
    series: results.map((result, i) => ({
      name: result.name,
      color: palette[i] ?? "#000",
      points: result.meanInFlight.map((v, w): [number, number] => [w + 1, v]),
      dashed: i === 0,
    })),
  }),
);
console.log(`${SECONDS} s per mode; replica A ${CLIENTS.a} clients, replica B ${CLIENTS.b}; in flight sampled every ${SAMPLE_MS} ms\n`);
console.log("| load seen by the replicas | mean in flight per worker | max ÷ min | mean instantaneous max − min | requests A / B |");
console.log("|---|---|---|---|---|");
for (const r of results) {
  console.log(
    `| ${r.name} | ${r.meanInFlight.map((v) => v.toFixed(2)).join(", ")} | ${r.spread.toFixed(2)} | ${r.meanGap.toFixed(2)} | ${r.requests.a} / ${r.requests.b} |`,
  );
}
