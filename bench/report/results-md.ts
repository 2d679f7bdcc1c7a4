/** bench/RESULTS.md, written from one run's results: never edited by hand. */

import { conversationsSection } from "./conversations-md.ts";
import type { Baseline } from "./baseline.ts";
import type { BenchResults } from "./results.ts";
import {
  closeTable,
  firstEventTable,
  latencyTable,
  memoryReferenceTable,
  memoryTable,
  soakOutcomes,
  soakTable,
  streamingTable,
  table,
  ttfbTable,
} from "./sections.ts";
import { judgeFloorTargets, judgeTargets, type TargetVerdict } from "./targets.ts";

/** `baseline`: an earlier run's floor-target figures (bench/baselines/), shown beside this run's. */
export function resultsMarkdown(r: BenchResults, baseline?: Baseline): string {
  const m = r.machine;
  const floorVerdicts = judgeFloorTargets(r);
  const verdicts = judgeTargets(r);
  return [
    `# disagg-proxy benchmark results`,
    ``,
    `<!-- Written by \`${r.command}\` (bench/run.ts). Do not edit by hand: run it again. -->`,
    ``,
    `What the proxy costs next to a client that calls the two workers itself, and next to the *floor* — the least any two-leg Bun proxy can do (bench/cluster/floor-relay.ts: \`Bun.serve\`, the client body parsed, a context_only \`fetch\` whose JSON answer is parsed, a generation_only \`fetch\` built from its hand-off, the answer handed back with \`new Response(upstream.body)\`; no validation, keepalives, frame scanning, logging, metrics or retries) — measured side by side in one run: the direct, floor and proxied paths take turns in short rounds against the same emulated workers (zero prefill and token latency), the order rotating, so all see the same machine; figures against the floor are ratios from the same rounds. Section (f) is of another kind: the same multi-turn conversations through the proxy under each routing setup, on workers whose prefill is charged per uncached token.`,
    ``,
    `Command: \`${r.command}\` (${r.machine.date}). Proxy: \`${m.proxyVersion}\`.`,
    ...(r.options.note === undefined ? [] : [``, `**Note on this run:** ${r.options.note}`]),
    ``,
    table(
      ["machine", ""],
      [
        ["cores (nproc)", String(m.cores)],
        ["CPU", m.cpuModel],
        ["memory", `${m.memoryGiB} GiB`],
        ["kernel", m.kernel],
        ["Bun", m.bun],
        ["open-file limit", String(m.openFileLimit)],
        ["load average at start", m.loadAverageAtStart.toFixed(2)],
      ],
    ),
    ``,
    `## Targets against the floor (issue #18)`,
    ``,
    ...(baseline === undefined ? [] : [`*Before* is ${baselineNote(baseline)}.`, ``]),
    ...targetsTable(floorVerdicts, baseline),
    ...(r.latency ? [`![proxy CPU per request over the floor's](floor.svg)`, ``] : []),
    `## Earlier targets (absolute)`,
    ``,
    ...targetsTable(verdicts),
    ...latencySection(r),
    ...agentSection(r),
    ...streamingSection(r),
    ...memorySection(r),
    ...closeSection(r),
    ...ttfbSection(r),
    ...soakSection(r),
    ...(r.conversations ? conversationsSection(r.conversations) : []),
    ...method(),
  ].join("\n");
}

function baselineNote(b: Baseline): string {
  return `the same sections run on \`${b.proxyVersion}\` (\`${b.command}\`, ${b.date}, load average ${b.loadAverageAtStart.toFixed(1)} at its start), kept in bench/baselines/; its floor was measured in its own rounds, so compare the ratios`;
}

function met(pass: boolean | undefined): string {
  return pass === undefined ? "not run" : pass ? "yes" : "**no**";
}

function targetsTable(verdicts: readonly TargetVerdict[], baseline?: Baseline): string[] {
  const missed = verdicts.filter((v) => v.pass === false);
  const before = (target: string): string => {
    const kept = baseline?.verdicts.find((v) => v.target === target);
    return kept === undefined ? "—" : `${kept.figure} (${met(kept.pass)})`;
  };
  return [
    baseline === undefined
      ? table(
          ["target", "this run", "met"],
          verdicts.map((v) => [v.target, v.figure, met(v.pass)]),
        )
      : table(
          ["target", "before", "this run", "met"],
          verdicts.map((v) => [v.target, before(v.target), v.figure, met(v.pass)]),
        ),
    ``,
    ...(missed.length === 0 ? [] : [`What limits the missed ones:`, ``, ...missed.map((v) => `- *${v.target}*: ${v.limit}`), ``]),
  ];
}

function errorsNote(s: NonNullable<BenchResults["streaming"]>): string {
  const errors = s.firstEvents.reduce((sum, f) => sum + f.errors, 0);
  return errors > 0 ? `; ${errors} errors` : "";
}

function closeSection(r: BenchResults): string[] {
  const c = r.close;
  if (!c) return [];
  return [
    `## (g) Upstream connections closed after clients leave`,
    ``,
    `${c.plan.streams.toLocaleString("en-US")} clients hold streamed chat requests that the generation worker keeps silent after the first token, then all drop their connections at once; the figure is the time from then until as many of the relay's connections to the generation worker as there were open streams have left ESTABLISHED, i.e. the relay (proxy or floor) has closed each stream's upstream connection; idle pooled connections may stay (read from /proc/net/tcp every ${c.pollMs} ms, so a figure is up to that much late, and the polling itself takes a little CPU from the relays). ${c.plan.repetitions} repetitions each, proxy and floor alternating. Medians: proxy **${c.proxyMedianMs.toFixed(1)} ms**, floor **${c.floorMedianMs.toFixed(1)} ms**.`,
    ``,
    closeTable(c),
    ``,
  ];
}

function latencySection(r: BenchResults): string[] {
  if (!r.latency) return [];
  const p = r.plan.latency;
  return [
    `## (a) Added latency, non-streamed chat`,
    ``,
    `A chat request with a ${p.tokens}-token answer; closed loop (each client sends its next request when its answer is complete), ${p.rounds} rounds of ${p.roundSeconds} s per path and concurrency, the three paths in rotating order. *Direct*: the load generator sends context_only to the context worker, builds the generation_only body from its answer with the proxy's own code (src/pipeline/bodies.ts), and sends it to the generation worker. *Floor*: the floor relay. *Added* is a relay's percentile minus direct's. CPU per request is read from /proc/<pid>/stat; the relay's is the median over rounds of (CPU in the round / requests in the round). *Other load* is the share of the machine used by processes outside the benchmark meanwhile (direct / floor / proxy rounds).`,
    ``,
    latencyTable(r.latency),
    ``,
    `![added latency against concurrency](latency.svg)`,
    ``,
  ];
}

function agentSection(r: BenchResults): string[] {
  if (!r.agent) return [];
  const p = r.plan.agent;
  return [
    `## (h) Agent-sized prompts`,
    ``,
    `Non-streamed chat: a system message of the given size of prose (an agent's tools and history) before a short user line, \`max_tokens\` ${p.tokens}, ${p.clients} closed-loop clients, ${p.rounds} rounds of ${p.roundSeconds} s per size, proxy and floor in rotating order. The workers tokenize at 4 bytes a token (\`--bytes-per-token 4\`), so the context answer carries floor(prompt bytes / 4) \`prompt_token_ids\`, which both relays send on to the generation worker. CPU per request: the median over rounds. The phases of one request are measured alone by \`bun bench/micro/agent-phases.ts\`.`,
    ``,
    table(
      [
        "system prompt",
        "body bytes",
        "proxy µs/req",
        "floor µs/req",
        "proxy ÷ floor",
        "p50 ms proxy / floor",
        "requests/s proxy / floor",
        "other load",
      ],
      r.agent.map((a) => [
        `${a.sizeKb} KB`,
        a.bodyBytes.toLocaleString("en-US"),
        a.proxyCpuUs.toFixed(0),
        a.floorCpuUs.toFixed(0),
        `${a.cpuOverFloor.toFixed(2)} ×`,
        `${(a.proxyP50Us / 1000).toFixed(1)} / ${(a.floorP50Us / 1000).toFixed(1)}`,
        `${a.proxyRequestsPerSecond.toFixed(0)} / ${a.floorRequestsPerSecond.toFixed(0)}`,
        `${(a.foreignLoad * 100).toFixed(0)} %${a.errors > 0 ? ` (${a.errors} errors)` : ""}`,
      ]),
    ),
    ``,
  ];
}

function streamingSection(r: BenchResults): string[] {
  const s = r.streaming;
  if (!s) return [];
  return [
    `## (b) Streamed relay`,
    ``,
    `${s.plan.concurrency} concurrent clients, streamed chat of ${s.plan.tokens} tokens each, ${s.plan.rounds} rounds of ${s.plan.requestsPerRound} requests per path, the three paths in rotating order. Proxied events/s are **${s.throughputRatio.toFixed(2)} ×** direct (floor ${s.floorThroughputRatio.toFixed(2)} ×, floor with a JS stream ${(s.floorJs.eventsPerSecond / s.direct.eventsPerSecond).toFixed(2)} ×); the proxy spends **${s.proxyOverGenerationCpu.toFixed(2)} ×** the generation worker's CPU per streamed request. In these saturated rounds a stream comes nearly whole at once, so its first event (request written → first complete SSE event) is mostly waiting for the cores; the paced rounds below measure the first event proper. Relay CPU is the median over rounds.`,
    ``,
    streamingTable(s),
    ``,
    `Time to first event, the figure a client waits for its first token: ${s.plan.concurrency} clients again, streams of ${s.plan.firstEvent.tokens} tokens that the generation worker paces at one per ${s.plan.firstEvent.tokenMs} ms (so the first event is not held behind an instant whole stream, and the cores are not saturated), at ${s.plan.firstEvent.clients.join(" and ")} clients, ${s.plan.rounds} rounds per path, rotating; request written → first complete SSE event (direct: the context request written → the generation worker's first event). *Floor, JS stream* is the floor relay reading the worker's stream through a JS pull stream, as any relay that watches frames must${errorsNote(s)}:`,
    ``,
    firstEventTable(s),
    ``,
  ];
}

function memorySection(r: BenchResults): string[] {
  const mem = r.memory;
  if (!mem) return [];
  const capped = mem.levels.some((l) => l.streams < 10_000) && r.plan.memory.levels.length > 0 && !r.options.quick;
  return [
    `## (c) Memory per open stream`,
    ``,
    `Streamed chat requests whose generation worker goes silent after the first token; the proxy sends a keepalive every ${mem.plan.keepaliveMs} ms. RSS (VmRSS) is the median of five readings once every stream has seen a keepalive; per stream is (RSS − RSS with no stream) / streams. The proxy runs with \`BUN_CONFIG_MAX_HTTP_REQUESTS\` raised (style.md §3.13), else only 256 streams would reach the worker.`,
    ...(capped
      ? [
          ``,
          `The top level is below 10,000 here: the proxy (and the floor) need two sockets per stream and this machine's open-file limit is ${r.machine.openFileLimit}, which this run could not raise (prlimit needs CAP_SYS_RESOURCE, which this container does not grant even to root); the top level is the highest that fits.`,
        ]
      : []),
    ``,
    memoryTable(mem),
    ``,
    `The floor relay (bench/cluster/floor-relay.ts) holding the same silent streams on the same workers in this run, at every level, and its variant that reads the body through a JS pull stream at the first; neither sends keepalives or looks at the frames:`,
    ``,
    memoryReferenceTable(mem),
    ``,
    `![resident memory against open streams](memory.svg)`,
    ``,
  ];
}

function ttfbSection(r: BenchResults): string[] {
  const t = r.ttfb;
  if (!t) return [];
  return [
    `## (d) Time to first byte under a ${t.plan.prefillMs / 1000} s prefill`,
    ``,
    `${t.plan.clients} concurrent streamed requests per route, connections opened beforehand, \`--stream-start-wait-ms ${t.plan.startWaitMs}\`: every status line must arrive within ${t.plan.startWaitMs + t.plan.slackMs} ms, and every stream must then complete.`,
    ``,
    ttfbTable(t),
    ``,
  ];
}

function soakSection(r: BenchResults): string[] {
  const s = r.soak;
  if (!s) return [];
  return [
    `## (e) Soak`,
    ``,
    `${s.plan.minutes} min at ${s.plan.ratePerSecond} requests/s (open loop, one connection per request), a fixed pseudo-random mix (seed ${s.plan.seed}) of healthy requests in every dialect, clients that leave mid-stream, mid-prefill and mid-silence, and worker faults (rejections, cut connections, in-band errors, silences filled by keepalives). Proxy RSS and open sockets (/proc/<pid>/fd entries that are sockets) sampled every ${s.plan.sampleSeconds} s; the first ${s.plan.warmupSeconds} s are warm-up.`,
    ``,
    soakTable(s),
    ``,
    soakOutcomes(s),
    ``,
    `![soak: RSS and sockets over time](soak.svg)`,
    ``,
  ];
}

function method(): string[] {
  return [
    `## Method and load generator`,
    ``,
    `- **Load generator**: a small Bun client on raw sockets (bench/http/), one keep-alive HTTP/1.1 connection per simulated client, requests pre-encoded. The maintained generators on offer measure one URL at a time: wrk (Debian 4.1.0) and autocannon (npm 9.0.0) cannot send the direct path, whose second request goes to another worker with a body built from the first answer; autocannon also records latency in whole milliseconds, too coarse for sub-millisecond differences; oha is not packaged for Debian bookworm. The SSE event counts, status-line times and thousands of held streams need a custom client anyway. Bun's own fetch was ruled out for the client because it costs more CPU per request than the raw socket, caps concurrent requests at 256, and does not expose when the status line arrived.`,
    `- Processes: the proxy is the compiled \`dist/disagg-proxy\`, logging at its default level to a file; the workers are \`dist/disagg-proxy worker\` processes with \`--max-records 1000\`. Every scenario starts its own processes.`,
    `- Every figure comes from this run; nothing is carried over from another. Raw JSON is in bench/out/ (not committed).`,
    ``,
  ];
}
