/** RESULTS.md section (f): the multi-turn conversations under each routing setup. */

import type { ConversationsResult, ConversationsRun, PrefillCount } from "../scenarios/conversations.ts";
import { table } from "./sections.ts";

const n0 = (v: number): string => (Number.isFinite(v) ? Math.round(v).toLocaleString("en-US") : "—");
const n1 = (v: number): string => (Number.isFinite(v) ? v.toFixed(1) : "—");
const k = (tokens: number): string => `${n0(tokens / 1000)}k`;
const k1 = (tokens: number): string => `${n1(tokens / 1000)}k`;
const pct = (v: number): string => (Number.isFinite(v) ? `${Math.round(v * 100)} %` : "—");

function uncached(counts: readonly PrefillCount[]): number {
  return counts.reduce((sum, c) => sum + c.promptTokens - c.cachedTokens, 0);
}

function prompted(counts: readonly PrefillCount[]): number {
  return counts.reduce((sum, c) => sum + c.promptTokens, 0);
}

function requests(counts: readonly PrefillCount[]): number {
  return counts.reduce((sum, c) => sum + c.requests, 0);
}

/** Every prefill of the run: context workers' and generation workers' own. */
function allPrefill(run: ConversationsRun): PrefillCount[] {
  return [...run.contextPrefill, ...run.localPrefill];
}

function routers(run: ConversationsRun, limit: number): string {
  const { contextRouter, generationRouter, conditional } = run.setup;
  return `${contextRouter} / ${generationRouter}${conditional ? `, max_local_prefill_length ${limit}` : ""}`;
}

export function conversationsSection(result: ConversationsResult): string[] {
  const p = result.plan;
  const runs = result.runs;
  const base = runs.find((run) => run.setup.name === "round_robin");
  const baseWork = base === undefined ? Number.NaN : uncached(allPrefill(base));
  const longest = p.systemTokens + p.turns * p.userTokens + (p.turns - 1) * p.replyTokens;
  const cacheTokens = p.kvCacheBlocks * p.tokensPerBlock;
  return [
    `## (f) Multi-turn conversations: what placement saves`,
    ``,
    `${p.conversations} conversations of ${p.turns} turns, ${p.clients} at a time (each client plays one conversation, turn after turn, then takes the next). Every prompt starts with the same ${p.systemTokens}-token system prompt; each turn adds a ${p.userTokens}-token user message after the previous answer (${p.replyTokens} tokens), so prompts grow from ${n0(p.systemTokens + p.userTokens)} to ${n0(longest)} tokens and each starts with the one before. Streamed chat, \`conversation_params.conversation_id\` set, the answers sent back as the history. ${p.contextWorkers} context and ${p.generationWorkers} generation emulated workers, started afresh for each setup: prefill costs ${p.prefillMsPerToken} ms per prompt token not already in the worker's KV cache, each output token after the first ${p.tokenMs} ms; the cache holds ${n0(p.kvCacheBlocks)} blocks of ${p.tokensPerBlock} tokens (${n0(cacheTokens)} tokens, ${n1(cacheTokens / longest)} of the longest prompts) per worker, least recently used evicted first. The proxy reads a disagg_config.yaml per setup (\`router: {type: …}\` per section, \`kv_cache_config.tokens_per_block: ${p.tokensPerBlock}\`, \`conditional_disagg_config\` for the conditional ones).`,
    ``,
    `TTFT is request written → first non-empty \`delta.content\`. Prefill work is counted on the worker side (\`GET /emulator/prefill\`: prompt and cached tokens of every context_only or aggregated request each worker prefilled); *skipped context* are the turns a generation worker served alone. Turns/s is turns answered / wall time of the run (closed loop).`,
    ``,
    table(
      [
        "setup",
        "context / generation router",
        "TTFT mean / p99 ms",
        `TTFT mean turn 1 → ${p.turns} ms`,
        "turns/s",
        "CPU ms per turn, proxy / workers",
        "context workers prefilled",
        "generation workers prefilled",
        "all prefill vs round_robin",
        "skipped context",
        "errors",
      ],
      runs.map((run) => {
        const total = uncached(allPrefill(run));
        return [
          `**${run.setup.name}**`,
          routers(run, p.maxLocalPrefillLength),
          `${n1(run.ttftMs.mean)} / ${n1(run.ttftMs.p99)}`,
          `${n1(run.ttftByTurnMs[0] ?? Number.NaN)} → ${n1(run.ttftByTurnMs.at(-1) ?? Number.NaN)}`,
          n1(run.requestsPerSecond),
          `${n1(run.cpuMsPerTurn.proxy)} / ${n1(run.cpuMsPerTurn.workers)}`,
          `${k1(uncached(run.contextPrefill))} tokens (${pct(1 - uncached(run.contextPrefill) / prompted(run.contextPrefill))} cached)`,
          requests(run.localPrefill) === 0
            ? "—"
            : `${k1(uncached(run.localPrefill))} tokens (${pct(1 - uncached(run.localPrefill) / prompted(run.localPrefill))} cached)`,
          `${k1(total)} tokens (${(total / baseWork).toFixed(2)} ×)`,
          pct(requests(run.localPrefill) / run.turns),
          run.errors === 0 ? "0" : `**${run.errors}**`,
        ];
      }),
    ),
    ``,
    `Prompt tokens in every setup: ${runs.map((run) => k(prompted(allPrefill(run)))).join(", ")}. Uncached tokens each worker prefilled:`,
    ``,
    table(
      ["setup", "context workers", "generation workers (context skipped)"],
      runs.map((run) => [
        run.setup.name,
        perWorker(run.contextPrefill),
        requests(run.localPrefill) === 0 ? "—" : perWorker(run.localPrefill),
      ]),
    ),
    ``,
    ...why(result, base),
    ...errorNotes(runs),
  ];
}

function perWorker(counts: readonly PrefillCount[]): string {
  return counts.map((c) => k1(c.promptTokens - c.cachedTokens)).join(" / ");
}

function cachedShare(run: ConversationsRun | undefined): string {
  return run === undefined ? "—" : pct(1 - uncached(allPrefill(run)) / prompted(allPrefill(run)));
}

function work(run: ConversationsRun | undefined): string {
  return run === undefined ? "—" : k1(uncached(allPrefill(run)));
}

function cpu(run: ConversationsRun | undefined): string {
  return run === undefined ? "—" : `${n1(run.cpuMsPerTurn.proxy)} / ${n1(run.cpuMsPerTurn.workers)}`;
}

function skipped(run: ConversationsRun | undefined): string {
  return run === undefined ? "—" : pct(requests(run.localPrefill) / run.turns);
}

function why(result: ConversationsResult, base: ConversationsRun | undefined): string[] {
  const p = result.plan;
  const find = (name: string): ConversationsRun | undefined => result.runs.find((run) => run.setup.name === name);
  const firstLast = (run: ConversationsRun | undefined): string =>
    run === undefined
      ? "—"
      : `${n1(run.ttftByTurnMs[0] ?? Number.NaN)} ms on turn 1, ${n1(run.ttftByTurnMs.at(-1) ?? Number.NaN)} ms on turn ${p.turns}`;
  const [sticky, aware] = [find("conversation"), find("kv_cache_aware")];
  const [localSticky, localAware] = [find("conditional+conversation"), find("conditional+kv_cache_aware")];
  const fits = n1((p.kvCacheBlocks * p.tokensPerBlock) / (p.systemTokens + p.turns * p.userTokens + (p.turns - 1) * p.replyTokens));
  return [
    `What each router does, and why the figures differ:`,
    ``,
    `- **round_robin** sends each request to the next worker in turn, whatever it holds. A conversation's turns land on every worker, so each worker would have to keep all ${p.clients} running conversations to hit, and its cache holds ${fits} full ones: little beyond the shared system prompt and a recent turn is found (${cachedShare(base)} of prompt tokens cached). Prefill grows with the prompt, and so does TTFT: ${firstLast(base)}.`,
    `- **conversation** keeps a conversation where it started (sticky by \`conversation_id\`; a new conversation goes to the least loaded worker by prompt tokens in flight). The worker still holds the previous turn, so only the new turn is prefilled (${cachedShare(sticky)} cached) and TTFT grows little (${firstLast(sticky)}). The price is balance: where a conversation starts decides where all its turns go (second table), and a worker given more long conversations than its cache holds evicts some. Which worker is least loaded at that instant depends on timing, so the split, and with it the evictions, varies from run to run for every cache-following setup.`,
    `- **kv_cache_aware** scores each worker by the share of the prompt it is believed to hold minus in-flight requests / max_batch_size (64), so it follows the cache without a conversation id (${cachedShare(aware)} cached; ${firstLast(aware)}). Chat prompts reach the proxy as text, which it cannot tokenize: the context router matches the text of prompts it placed itself; the generation router matches the context answer's token ids against each worker's KV events, read from \`POST /kv_cache_events\` after every request. Those reads cost CPU on this 2-core machine shared by ${p.contextWorkers + p.generationWorkers} workers, the proxy and the load generator (${cpu(aware)} ms per turn for the proxy and the workers, against ${cpu(sticky)} with conversation), which shows in its TTFT.`,
    `- **conditional** (\`max_local_prefill_length: ${p.maxLocalPrefillLength}\`): the generation router picks a generation worker first; when the part of the prompt that worker is not known to hold is at most ${p.maxLocalPrefillLength} tokens, the request goes to it alone and it prefills that part from its own cache (it kept the previous turn's prompt): no context phase, one hop fewer. The conversation router knows nothing of a new conversation, so its first turns still go through a context worker (${skipped(localSticky)} of turns skipped); kv_cache_aware finds the shared system prompt on the generation workers that served any turn, which can leave a first turn's ${p.userTokens} new tokens under the limit (${skipped(localAware)} skipped). The prefill work is not reduced but moved onto the generation workers (${work(localSticky)} and ${work(localAware)} tokens in all, against ${work(sticky)} and ${work(aware)} without the condition).`,
    ...coldJoinNote(p.conversations, find("kv_cache_aware, cold join"), p.contextWorkers, p.generationWorkers),
    ``,
    `Limits of the emulation: a worker's prefills are timers that do not slow each other or its decoding, so uneven placement costs no queueing here; the KV transfer from context to generation worker is free, so the TTFT conditional disaggregation saves on real GPUs (no transfer of the whole prompt's KV) is larger than shown, and what local prefills cost the generation workers' decoding is not shown. Turns/s follow the turns' latency (${p.clients} clients in a closed loop), not a prefill capacity.`,
    ``,
    ...usageNote(result),
  ];
}

/** A worker of each role joining cold halfway: the traffic it got after the join, and what prefill was kept. */
function coldJoinNote(conversations: number, run: ConversationsRun | undefined, contexts: number, generations: number): string[] {
  const join = run?.coldJoin;
  if (run === undefined || join === undefined) return [];
  const share = (n: number): string => `${n0((100 * n) / Math.max(join.turnsAfter, 1))} %`;
  return [
    `- **kv_cache_aware, cold join**: ${contexts} + ${generations} workers play the first ${Math.floor(conversations / 2)} conversations; then one more worker of each role joins (a reloaded disagg_config.yaml) with an empty cache, while the others all hold the shared system prompt. The router explores: one pick in 8 goes to a worker given under a quarter of its fair share of the last 64 picks, until it holds the shared prefix and wins ties. Of the ${n0(join.turnsAfter)} turns after the join, the new context worker prefilled ${n0(join.context.requests)} (${share(join.context.requests)}; fair share 1 in ${contexts + 1}) and the new generation worker served ${n0(join.generation.requests)} (${share(join.generation.requests)}), while ${cachedShare(run)} of all prompt tokens stayed cached (${work(run)} prefilled).`,
  ];
}

/**
 * The answers' usage against the workers' counts, where every turn was disaggregated: they
 * differ when the proxy relays the generation worker's usage instead of the context worker's.
 */
function usageNote(result: ConversationsResult): string[] {
  const runs = result.runs.filter((run) => requests(run.localPrefill) === 0);
  const answersPrompt = runs.reduce((sum, run) => sum + run.answerPromptTokens, 0);
  const answers = 1 - runs.reduce((sum, run) => sum + run.answerUncachedTokens, 0) / answersPrompt;
  const workers =
    1 - runs.reduce((sum, run) => sum + uncached(run.contextPrefill), 0) / runs.reduce((sum, run) => sum + prompted(run.contextPrefill), 0);
  if (runs.length === 0) return [];
  if (Math.abs(answers - workers) < 0.01)
    return [
      `The answers' own usage (\`prompt_tokens_details.cached_tokens\`) agrees with the context workers' counts: ${pct(answers)} of prompt tokens cached in the setups that always disaggregate, as the proxy sends the context answer's usage to the generation worker as \`disaggregated_params.ctx_usage\` (TensorRT-LLM PR #14177) and the worker reports it.`,
      ``,
    ];
  return [
    `The answers' own usage says ${pct(answers)} of prompt tokens were cached in the setups that always disaggregate, where the context workers counted ${pct(workers)}: the proxy relays the generation worker's usage, whose \`cached_tokens\` is that worker's own count (none in the emulator; a real generation worker counts the whole transferred prompt as cached). Upstream's proxy takes \`prompt_tokens\` and \`cached_tokens\` from the context answer (TensorRT-LLM PR #13620); this one does not yet, hence the worker-side count.`,
    ``,
  ];
}

function errorNotes(runs: readonly ConversationsRun[]): string[] {
  const failed = runs.filter((run) => run.errors > 0);
  if (failed.length === 0) return [];
  return [
    `Errors (a failed turn ends its conversation):`,
    ``,
    ...failed.map((run) => `- ${run.setup.name}: ${run.errorSamples.join("; ")}`),
    ``,
  ];
}
