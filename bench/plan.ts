/** `bun bench/run.ts` options and what each scenario runs with, full or `--quick`. */

import { parseArgs } from "node:util";
import type { AgentPlan } from "./scenarios/agent.ts";
import type { ClosePlan } from "./scenarios/close.ts";
import { ROUTING_SETUPS, type ConversationsPlan } from "./scenarios/conversations.ts";
import type { LatencyPlan } from "./scenarios/latency.ts";
import type { MemoryPlan } from "./scenarios/memory.ts";
import type { SoakPlan } from "./scenarios/soak.ts";
import type { StreamingPlan } from "./scenarios/streaming.ts";
import type { TtfbPlan } from "./scenarios/ttfb.ts";

export const SCENARIOS = ["latency", "agent", "streaming", "memory", "close", "ttfb", "soak", "conversations"] as const;
export type Scenario = (typeof SCENARIOS)[number];

export interface BenchOptions {
  readonly quick: boolean;
  readonly soakMinutes: number;
  readonly only: readonly Scenario[];
  /** Use this proxy binary instead of building dist/disagg-proxy. */
  readonly binary: string | undefined;
  /** Run the proxy from source under `bun --cpu-prof` (profiles in bench/out/profiles). */
  readonly profile: boolean;
  /** A sentence for RESULTS.md about the conditions of the run (e.g. a shared machine). */
  readonly note: string | undefined;
}

export interface BenchPlan {
  readonly latency: LatencyPlan;
  readonly agent: AgentPlan;
  readonly streaming: StreamingPlan;
  readonly memory: MemoryPlan;
  readonly close: ClosePlan;
  readonly ttfb: TtfbPlan;
  readonly soak: SoakPlan;
  readonly conversations: ConversationsPlan;
}

export const USAGE = `Usage: npm run bench -- [--quick] [--soak-minutes N] [--only latency,agent,streaming,memory,close,ttfb,soak,conversations] [--binary PATH] [--profile] [--note TEXT]`;

export function parseBenchArgs(argv: readonly string[]): BenchOptions {
  const { values } = parseArgs({
    args: [...argv],
    options: {
      quick: { type: "boolean", default: false },
      "soak-minutes": { type: "string" },
      only: { type: "string" },
      binary: { type: "string" },
      profile: { type: "boolean", default: false },
      note: { type: "string" },
      help: { type: "boolean", short: "h", default: false },
    },
    strict: true,
  });
  if (values.help) {
    process.stdout.write(`${USAGE}\n`);
    process.exit(0);
  }
  const quick = values.quick;
  const soakMinutes = values["soak-minutes"] === undefined ? (quick ? 0.5 : 10) : Number(values["soak-minutes"]);
  if (!Number.isFinite(soakMinutes) || soakMinutes <= 0) throw new Error(`--soak-minutes must be a positive number\n${USAGE}`);
  return { quick, soakMinutes, only: onlyOf(values.only), binary: values.binary, profile: values.profile, note: values.note };
}

function onlyOf(list: string | undefined): Scenario[] {
  if (list === undefined) return [...SCENARIOS];
  const names = list.split(",").map((name) => name.trim());
  const unknown = names.filter((name) => !(SCENARIOS as readonly string[]).includes(name));
  if (unknown.length > 0) throw new Error(`Unknown scenario(s) ${unknown.join(", ")}\n${USAGE}`);
  return SCENARIOS.filter((name) => names.includes(name));
}

/** `maxStreams`: the most open streams this machine's open-file limit allows the proxy. */
export function benchPlan(options: BenchOptions, maxStreams: number, logDir: string): BenchPlan {
  const quick = options.quick;
  return {
    latency: {
      concurrencies: [1, 16, 64],
      rounds: quick ? 2 : 6,
      roundSeconds: quick ? 1 : 2,
      warmupSeconds: quick ? 0.5 : 1.5,
      tokens: 16,
    },
    agent: {
      sizesKb: [1, 10, 100, 300],
      clients: 16,
      rounds: quick ? 2 : 4,
      roundSeconds: quick ? 1 : 2,
      warmupSeconds: quick ? 0.5 : 1,
      tokens: 64,
    },
    streaming: {
      concurrency: 16,
      tokens: 256,
      rounds: quick ? 2 : 4,
      requestsPerRound: quick ? 100 : 500,
      firstEvent: { tokens: 32, tokenMs: 2, requestsPerRound: quick ? 80 : 240, clients: [1, 16] },
    },
    memory: {
      levels: (quick ? [500, 2000] : [1000, 10_000]).map((n) => Math.min(n, maxStreams)),
      keepaliveMs: 2000,
      maxHttpRequests: 32_768,
      logDir,
    },
    close: { streams: quick ? 500 : 1000, repetitions: quick ? 2 : 3 },
    ttfb: { clients: 100, prefillMs: 5000, startWaitMs: 1000, slackMs: 50 },
    soak: {
      minutes: options.soakMinutes,
      ratePerSecond: 50,
      sampleSeconds: quick ? 5 : 10,
      // At least a minute (a fifth of a short run) for the JIT, pools and heap to settle.
      warmupSeconds: Math.min(60, options.soakMinutes * 12),
      maxInFlight: 2000,
      seed: 6,
    },
    conversations: {
      // 4 + 4 workers; each turn adds a user message and the previous answer (~290 tokens), so
      // the last turn's prompt is ~3,000 tokens (~1,500 quick). The cache of 512 blocks of 16
      // (8,192 tokens; 200 blocks quick) holds two or three whole conversations per worker, and
      // `clients` conversations run at once: two per worker if each stays on one.
      conversations: quick ? 16 : 50,
      turns: quick ? 5 : 10,
      clients: quick ? 4 : 8,
      systemTokens: 128,
      userTokens: 256,
      replyTokens: 32,
      contextWorkers: 4,
      generationWorkers: 4,
      prefillMsPerToken: 0.05,
      tokenMs: 1,
      tokensPerBlock: 16,
      kvCacheBlocks: quick ? 200 : 512,
      maxLocalPrefillLength: 512,
      setups: ROUTING_SETUPS,
      logDir,
    },
  };
}
