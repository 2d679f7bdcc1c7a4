/**
 * (f) Multi-turn conversations: what placement saves when prompts share prefixes. The same
 * conversations (each turn's prompt is the previous turns plus one more) run once per routing
 * setup, each on fresh emulated workers whose prefill is charged per uncached prompt token and
 * whose KV cache holds a conversation or two, not all of them.
 *
 * Prefill work is counted on the worker side: each worker's GET /emulator/prefill (prompt and
 * cached tokens of every context_only and aggregated request it prefilled). The answers' own
 * usage (prompt_tokens − cached_tokens) is summed too, as a check.
 */

import { startFleet, type Fleet, type RouterType } from "../cluster/fleet.ts";
import { cpuSeconds } from "../cluster/proc-stats.ts";
import type { Service } from "../cluster/service.ts";
import { summarize, type Summary } from "../lib/stats.ts";
import { runConversations, type ConversationLoad, type TurnRecord } from "../load/conversation-load.ts";
import { endpointOf } from "../load/paths.ts";

export interface RoutingSetup {
  readonly name: string;
  readonly contextRouter: RouterType;
  readonly generationRouter: RouterType;
  /** Serve with conditional_disagg_config.max_local_prefill_length = the plan's. */
  readonly conditional: boolean;
  /**
   * One more worker of each role joins (SIGHUP reload) when half the conversations are done,
   * with an empty cache while the others hold the shared system prompt: does it get traffic?
   */
  readonly coldJoin?: boolean;
}

/** The routing setups compared, in the report's order. */
export const ROUTING_SETUPS: readonly RoutingSetup[] = Object.freeze([
  { name: "round_robin", contextRouter: "round_robin", generationRouter: "round_robin", conditional: false },
  { name: "conversation", contextRouter: "conversation", generationRouter: "conversation", conditional: false },
  { name: "kv_cache_aware", contextRouter: "kv_cache_aware", generationRouter: "kv_cache_aware", conditional: false },
  {
    name: "kv_cache_aware, cold join",
    contextRouter: "kv_cache_aware",
    generationRouter: "kv_cache_aware",
    conditional: false,
    coldJoin: true,
  },
  { name: "conditional+conversation", contextRouter: "conversation", generationRouter: "conversation", conditional: true },
  { name: "conditional+kv_cache_aware", contextRouter: "kv_cache_aware", generationRouter: "kv_cache_aware", conditional: true },
]);

export interface ConversationsPlan extends ConversationLoad {
  readonly contextWorkers: number;
  readonly generationWorkers: number;
  readonly prefillMsPerToken: number;
  readonly tokenMs: number;
  readonly tokensPerBlock: number;
  readonly kvCacheBlocks: number;
  readonly maxLocalPrefillLength: number;
  readonly setups: readonly RoutingSetup[];
  readonly logDir: string;
}

/** What one worker prefilled: requests, their prompt tokens and the part already cached. */
export interface PrefillCount {
  readonly requests: number;
  readonly promptTokens: number;
  readonly cachedTokens: number;
}

export interface ConversationsRun {
  readonly setup: RoutingSetup;
  /** Turns answered in full. */
  readonly turns: number;
  readonly errors: number;
  readonly errorSamples: readonly string[];
  readonly seconds: number;
  readonly requestsPerSecond: number;
  readonly ttftMs: Summary;
  readonly turnMs: Summary;
  /** Mean TTFT per turn number (index 0: every conversation's first turn). */
  readonly ttftByTurnMs: readonly number[];
  /** Per context worker: its context_only prefills. */
  readonly contextPrefill: readonly PrefillCount[];
  /** Per generation worker: the turns it prefilled itself (context phase skipped). */
  readonly localPrefill: readonly PrefillCount[];
  /** CPU time per answered turn (/proc/<pid>/stat), of the proxy and of the eight workers together. */
  readonly cpuMsPerTurn: { readonly proxy: number; readonly workers: number };
  /** Σ over answers of usage prompt_tokens and (prompt_tokens − cached_tokens). */
  readonly answerPromptTokens: number;
  readonly answerUncachedTokens: number;
  /** coldJoin: turns played after the join, and the workers that joined (context, generation). */
  readonly coldJoin?: { readonly turnsAfter: number; readonly context: PrefillCount; readonly generation: PrefillCount };
}

export interface ConversationsResult {
  readonly plan: Omit<ConversationsPlan, "logDir">;
  readonly runs: readonly ConversationsRun[];
}

export async function runConversationsScenario(
  binary: string,
  plan: ConversationsPlan,
  progress: (message: string) => void,
): Promise<ConversationsResult> {
  const runs: ConversationsRun[] = [];
  for (const setup of plan.setups) {
    // oxlint-disable-next-line no-await-in-loop -- one setup at a time, each on its own processes
    const run = await runSetup(binary, plan, setup);
    progress(
      `  ${setup.name}: TTFT mean ${run.ttftMs.mean.toFixed(1)} ms, ${run.requestsPerSecond.toFixed(1)} turns/s, ${run.errors} errors`,
    );
    runs.push(run);
  }
  const { logDir: _logDir, ...shown } = plan;
  return { plan: shown, runs };
}

async function runSetup(binary: string, plan: ConversationsPlan, setup: RoutingSetup): Promise<ConversationsRun> {
  const fleet = await startFleet({
    name: `conversations-${setup.name}`,
    binary,
    logDir: plan.logDir,
    contextWorkers: plan.contextWorkers,
    generationWorkers: plan.generationWorkers,
    workerFlags: workerFlags(plan),
    contextRouter: setup.contextRouter,
    generationRouter: setup.generationRouter,
    tokensPerBlock: plan.tokensPerBlock,
    maxLocalPrefillLength: setup.conditional ? plan.maxLocalPrefillLength : undefined,
    maxHttpRequests: 4096,
    heldBack: setup.coldJoin === true ? 1 : 0,
  });
  try {
    const cpuBefore = cpuOf(fleet);
    const outcome = await playLoad(fleet, plan, setup);
    const cpuAfter = cpuOf(fleet);
    const [contextPrefill, localPrefill, generationPrefill] = await Promise.all([
      prefillOf(fleet.context, "context"),
      prefillOf(fleet.generation, "aggregated"),
      prefillOf(fleet.generation, "generation"),
    ]);
    const turns = outcome.turns;
    return {
      setup,
      turns: turns.length,
      errors: outcome.errors,
      errorSamples: outcome.errorSamples,
      seconds: outcome.seconds,
      requestsPerSecond: turns.length / outcome.seconds,
      ttftMs: summarize(turns.map((t) => t.ttftMs)),
      turnMs: summarize(turns.map((t) => t.totalMs)),
      ttftByTurnMs: meanByTurn(turns, plan.turns),
      contextPrefill,
      localPrefill,
      cpuMsPerTurn: {
        proxy: ((cpuAfter.proxy - cpuBefore.proxy) * 1000) / turns.length,
        workers: ((cpuAfter.workers - cpuBefore.workers) * 1000) / turns.length,
      },
      answerPromptTokens: sum(turns.map((t) => t.promptTokens)),
      answerUncachedTokens: sum(turns.map((t) => t.promptTokens - t.cachedTokens)),
      ...(outcome.turnsAfterJoin === undefined
        ? {}
        : {
            coldJoin: {
              turnsAfter: outcome.turnsAfterJoin,
              context: contextPrefill.at(-1) ?? NO_PREFILL,
              generation: generationPrefill.at(-1) ?? NO_PREFILL,
            },
          }),
    };
  } finally {
    await fleet.stop();
  }
}

const NO_PREFILL: PrefillCount = { requests: 0, promptTokens: 0, cachedTokens: 0 };

/** The whole load; with a cold join, its first half, the join, then the second half. */
async function playLoad(
  fleet: Fleet,
  plan: ConversationsPlan,
  setup: RoutingSetup,
): Promise<Awaited<ReturnType<typeof runConversations>> & { turnsAfterJoin?: number }> {
  const endpoint = endpointOf(fleet.proxy.url);
  if (setup.coldJoin !== true) return runConversations(endpoint, plan);
  const half = Math.floor(plan.conversations / 2);
  const before = await runConversations(endpoint, { ...plan, conversations: half });
  await fleet.admitHeldBack();
  const after = await runConversations(endpoint, { ...plan, firstConversation: half });
  return {
    turns: [...before.turns, ...after.turns],
    errors: before.errors + after.errors,
    errorSamples: [...before.errorSamples, ...after.errorSamples],
    seconds: before.seconds + after.seconds,
    turnsAfterJoin: after.turns.length,
  };
}

function cpuOf(fleet: Fleet): { proxy: number; workers: number } {
  const workers = [...fleet.context, ...fleet.generation].reduce((total, worker) => total + cpuSeconds(worker.pid), 0);
  return { proxy: cpuSeconds(fleet.proxy.pid), workers };
}

function workerFlags(plan: ConversationsPlan): string[] {
  return [
    ["--prefill-ms-per-token", plan.prefillMsPerToken],
    ["--token-ms", plan.tokenMs],
    ["--tokens-per-block", plan.tokensPerBlock],
    ["--kv-cache-blocks", plan.kvCacheBlocks],
    ["--max-records", 1000],
  ].flatMap(([flag, value]) => [String(flag), String(value)]);
}

async function prefillOf(workers: readonly Service[], phase: "context" | "aggregated" | "generation"): Promise<PrefillCount[]> {
  return Promise.all(
    workers.map(async (worker) => {
      const response = await fetch(`${worker.url}/emulator/prefill`, { headers: { connection: "close" } });
      if (!response.ok) throw new Error(`${worker.name}: GET /emulator/prefill answered ${response.status}`);
      const tally = (await response.json()) as Record<
        string,
        { requests: number; prompt_tokens: number; cached_tokens: number } | undefined
      >;
      const counts = tally[phase];
      // Builds before the generation count (--binary of an older commit) report none.
      if (counts === undefined && phase === "generation") return NO_PREFILL;
      if (counts === undefined) throw new Error(`${worker.name}: GET /emulator/prefill has no ${phase} counts`);
      return { requests: counts.requests, promptTokens: counts.prompt_tokens, cachedTokens: counts.cached_tokens };
    }),
  );
}

function meanByTurn(turns: readonly TurnRecord[], count: number): number[] {
  return Array.from({ length: count }, (_, turn) => {
    const ttfts = turns.filter((t) => t.turn === turn).map((t) => t.ttftMs);
    return ttfts.length === 0 ? Number.NaN : sum(ttfts) / ttfts.length;
  });
}

function sum(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0);
}
