/**
 * `npm run bench`: the proxy's cost next to going straight to the workers, in one run.
 *
 * Builds dist/disagg-proxy, then runs each scenario on its own fresh cluster of processes
 * (emulated context and generation workers with zero latency, and the proxy): (a) latency,
 * (b) streaming, (c) memory, (g) close, (d) ttfb, (e) soak, (f) conversations; the floor relay
 * (bench/cluster/floor-relay.ts) runs beside the proxy in (a), (b), (c) and (g). Raw figures go to bench/out/*.json; a full
 * run of every scenario rewrites bench/RESULTS.md and the charts beside it, a --quick or
 * partial run writes them under bench/out/ instead.
 */

import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { buildBinary } from "../scripts/build.ts";
import { startCluster, type Cluster, type ClusterSpec } from "./cluster/cluster.ts";
import { raiseOpenFileLimit } from "./cluster/limits.ts";
import { benchPlan, parseBenchArgs, SCENARIOS, type BenchOptions, type Scenario } from "./plan.ts";
import { floorChart, latencyChart, memoryChart, soakChart } from "./report/charts.ts";
import { describeMachine } from "./report/machine.ts";
import type { Baseline } from "./report/baseline.ts";
import type { BenchResults } from "./report/results.ts";
import { resultsMarkdown } from "./report/results-md.ts";
import { AGENT_WORKER_FLAGS, runAgent } from "./scenarios/agent.ts";
import { runClose } from "./scenarios/close.ts";
import { runConversationsScenario } from "./scenarios/conversations.ts";
import { runLatency } from "./scenarios/latency.ts";
import { runMemory } from "./scenarios/memory.ts";
import { runSoak } from "./scenarios/soak.ts";
import { runStreaming } from "./scenarios/streaming.ts";
import { runTtfb } from "./scenarios/ttfb.ts";

const ROOT = join(import.meta.dir, "..");
const OUT = join(ROOT, "bench", "out");
/** Enough descriptors for 10,000 streams: two sockets each in the proxy, plus slack. */
const WANTED_OPEN_FILES = 65_536;
/** Descriptors the proxy needs besides the two per stream (listener, pools, logs, runtime). */
const FD_SLACK = 200;

async function main(): Promise<void> {
  const options = parseBenchArgs(Bun.argv.slice(2));
  mkdirSync(OUT, { recursive: true });
  const openFiles = raiseOpenFileLimit(WANTED_OPEN_FILES);
  const binary = options.binary ?? (await build());
  const machine = describeMachine(binary, openFiles);
  const plan = benchPlan(options, Math.floor((openFiles - FD_SLACK) / 200) * 100, join(OUT, "logs"));
  const results: BenchResults = { machine, command: commandLine(), options, plan };
  const base = { binary, root: ROOT, logDir: join(OUT, "logs") };
  const spec = (name: Scenario, extra: Partial<ClusterSpec>): ClusterSpec => ({
    name,
    ...base,
    maxHttpRequests: 4096,
    workerFlags: ["--max-records", "1000"],
    profileDir: options.profile ? join(OUT, "profiles", name) : undefined,
    ...extra,
  });
  const cores = machine.cores;
  for (const scenario of options.only) {
    progress(`${scenario}…`);
    const started = performance.now();
    if (scenario === "latency")
      results.latency = await withCluster(spec("latency", { withFloor: true }), (c) => runLatency(c, plan.latency, cores));
    if (scenario === "agent") {
      const agentSpec = spec("agent", { withFloor: true, workerFlags: ["--max-records", "1000", ...AGENT_WORKER_FLAGS] });
      results.agent = await withCluster(agentSpec, (c) => runAgent(c, plan.agent, cores));
    }
    if (scenario === "streaming")
      results.streaming = await withCluster(spec("streaming", { withFloor: true, withJsFloor: true }), (c) =>
        runStreaming(c, plan.streaming, cores),
      );
    if (scenario === "close") results.close = await withCluster(spec("close", { withFloor: true }), (c) => runClose(c, plan.close));
    if (scenario === "memory") {
      const flags = ["--keepalive-interval-ms", String(plan.memory.keepaliveMs)];
      const memorySpec = spec("memory", { proxyFlags: flags, maxHttpRequests: plan.memory.maxHttpRequests });
      results.memory = await withCluster(memorySpec, (c) => runMemory(c, plan.memory));
    }
    if (scenario === "ttfb") {
      const flags = ["--stream-start-wait-ms", String(plan.ttfb.startWaitMs)];
      results.ttfb = await withCluster(spec("ttfb", { proxyFlags: flags }), (c) => runTtfb(c, plan.ttfb));
    }
    if (scenario === "conversations") results.conversations = await runConversationsScenario(binary, plan.conversations, progress);
    if (scenario === "soak")
      results.soak = await withCluster(spec("soak", { proxyFlags: ["--keepalive-interval-ms", "1000"] }), (c) => runSoak(c, plan.soak));
    writeFileSync(join(OUT, `${scenario}.json`), JSON.stringify(results[scenario], null, 2));
    progress(`${scenario} done in ${((performance.now() - started) / 1000).toFixed(0)} s`);
  }
  writeFileSync(join(OUT, "results.json"), JSON.stringify(results, null, 2));
  const reportDir = publishes(options) ? join(ROOT, "bench") : OUT;
  writeReport(reportDir, results);
  progress(`wrote ${join(reportDir, "RESULTS.md")}`);
}

/** Only a full run of every scenario replaces the published figures. */
function publishes(options: BenchOptions): boolean {
  return !options.quick && !options.profile && options.binary === undefined && options.only.length === SCENARIOS.length;
}

async function build(): Promise<string> {
  const outfile = join(ROOT, "dist", "disagg-proxy");
  progress("building dist/disagg-proxy…");
  await buildBinary({ entry: join(ROOT, "src", "main.ts"), outfile });
  return outfile;
}

async function withCluster<T>(spec: ClusterSpec, run: (cluster: Cluster) => Promise<T>): Promise<T> {
  const cluster = await startCluster(spec);
  try {
    return await run(cluster);
  } finally {
    await cluster.stop();
  }
}

/** Sections after this line come from other commands (npm run soak, bench/body-bounds.ts) and survive a rerun. */
const KEPT_MARKER = "<!-- Kept across npm run bench:";
/** The "before" of the floor targets (bench/report/baseline.ts): main as issue #37's session began (issue-18-before.json: #18's). */
const BASELINE = join(ROOT, "bench", "baselines", "issue-37-before.json");

function writeReport(dir: string, results: BenchResults): void {
  const file = join(dir, "RESULTS.md");
  const previous = existsSync(file) ? readFileSync(file, "utf8") : "";
  const kept = previous.includes(KEPT_MARKER) ? `\n${previous.slice(previous.indexOf(KEPT_MARKER))}` : "";
  const baseline = existsSync(BASELINE) ? (JSON.parse(readFileSync(BASELINE, "utf8")) as Baseline) : undefined;
  writeFileSync(file, resultsMarkdown(results, baseline) + kept);
  if (results.latency) writeFileSync(join(dir, "latency.svg"), latencyChart(results.latency));
  if (results.latency) writeFileSync(join(dir, "floor.svg"), floorChart(results.latency));
  if (results.memory) writeFileSync(join(dir, "memory.svg"), memoryChart(results.memory));
  if (results.soak) writeFileSync(join(dir, "soak.svg"), soakChart(results.soak));
}

function commandLine(): string {
  const args = Bun.argv.slice(2);
  return args.length === 0 ? "npm run bench" : `npm run bench -- ${args.join(" ")}`;
}

function progress(message: string): void {
  process.stderr.write(`[bench ${new Date().toISOString().slice(11, 19)}] ${message}\n`);
}

await main();
