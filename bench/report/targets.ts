/** The targets, judged from one run's figures: against the floor (issue #18), and the earlier absolute ones. */

import type { BenchResults } from "./results.ts";

export interface TargetVerdict {
  readonly target: string;
  readonly figure: string;
  /** undefined: the scenario did not run. */
  readonly pass: boolean | undefined;
  /** What limits the figure, shown when the target is missed. */
  readonly limit: string;
}

const KIB = 1024;

/** Issue #18: the proxy against the floor relay measured in the same rounds. */
export function judgeFloorTargets(r: BenchResults): TargetVerdict[] {
  const verdicts: TargetVerdict[] = [];
  for (const p of r.latency ?? []) {
    verdicts.push({
      target: `CPU per non-streamed two-leg request ≤ 1.5 × the floor's, ${p.concurrency} client${p.concurrency === 1 ? "" : "s"}`,
      figure: `${Math.round(p.proxy.relayCpuUs)} vs ${Math.round(p.floor.relayCpuUs)} µs (${p.cpuOverFloor.toFixed(2)} ×)`,
      pass: p.cpuOverFloor <= 1.5,
      limit: FLOOR_LIMITS.cpu(p.proxy.relayCpuUs, p.floor.relayCpuUs),
    });
  }
  const agent = r.agent?.find((a) => a.sizeKb === 100);
  if (agent) {
    verdicts.push({
      target: "CPU per agent-sized request (100 KB system prompt, 16 clients) ≤ the floor's",
      figure: `${Math.round(agent.proxyCpuUs)} vs ${Math.round(agent.floorCpuUs)} µs (${agent.cpuOverFloor.toFixed(2)} ×)`,
      pass: agent.cpuOverFloor <= 1,
      limit: AGENT_LIMIT,
    });
  }
  const s = r.streaming;
  if (s) {
    const at = s.firstEvents.find((f) => f.clients === s.plan.concurrency);
    if (at) {
      const proxy = at.proxy.p50 / 1000;
      const floor = at.floor.p50 / 1000;
      verdicts.push({
        target: `time to first event, ${s.plan.concurrency} streamed clients, p50 ≤ floor + 1 ms`,
        figure: `${proxy.toFixed(2)} vs ${floor.toFixed(2)} ms (+${(proxy - floor).toFixed(2)} ms; direct ${(at.direct.p50 / 1000).toFixed(2)} ms)`,
        pass: proxy <= floor + 1,
        limit: FLOOR_LIMITS.firstEvent(r),
      });
    }
  }
  const mem = r.memory;
  for (const level of mem?.levels ?? []) {
    const floor = mem?.references.find((ref) => ref.relay === "native" && ref.streams === level.streams);
    const kib = level.proxyBytesPerStream / KIB;
    verdicts.push({
      target: `≤ 14 KiB RSS per idle open stream at ${level.streams.toLocaleString("en-US")} streams`,
      figure: `${kib.toFixed(1)} KiB (floor ${floor ? (floor.bytesPerStream / KIB).toFixed(1) : "—"} KiB)`,
      pass: kib <= 14,
      limit: FLOOR_LIMITS.memory(kib, floor === undefined ? Number.NaN : floor.bytesPerStream / KIB, jsRelayKib(r)),
    });
    // Issue #37 asked for 16 KiB at 1,000 and 10,000 streams (issue #18's 14 KiB stays above).
    verdicts.push({
      target: `≤ 16 KiB RSS per idle open stream at ${level.streams.toLocaleString("en-US")} streams (issue #37)`,
      figure: `${kib.toFixed(1)} KiB`,
      pass: kib <= 16,
      limit: FLOOR_LIMITS.memory(kib, floor === undefined ? Number.NaN : floor.bytesPerStream / KIB, jsRelayKib(r)),
    });
  }
  if (s) {
    verdicts.push({
      target: "streamed events/s ≥ 0.95 × direct",
      figure: `${s.throughputRatio.toFixed(2)} × (floor ${s.floorThroughputRatio.toFixed(2)} ×)`,
      pass: s.throughputRatio >= 0.95,
      limit: streamingLimit(r),
    });
    verdicts.push({
      target: `SSE relay CPU per ${s.plan.tokens}-token stream ≤ the floor's (native pipe)`,
      figure: `${s.proxy.relayCpuSecondsPer1000.toFixed(3)} vs ${s.floor.relayCpuSecondsPer1000.toFixed(3)} ms per stream`,
      pass: s.proxy.relayCpuSecondsPer1000 <= s.floor.relayCpuSecondsPer1000,
      limit: relayCpuLimit(s),
    });
  }
  const c = r.close;
  if (c) {
    verdicts.push({
      target: `every upstream connection closed ≤ 45 ms after ${c.plan.streams.toLocaleString("en-US")} clients leave`,
      figure: `${c.proxyMedianMs.toFixed(0)} ms (floor ${c.floorMedianMs.toFixed(0)} ms; medians of ${c.plan.repetitions})`,
      pass: c.proxyMedianMs <= 45,
      limit: FLOOR_LIMITS.close(c.proxyMedianMs, c.floorMedianMs),
    });
  }
  if (r.soak)
    verdicts.push({
      target: "no regression of the soak (flat RSS and sockets)",
      figure: soakFigure(r),
      pass: r.soak.pass,
      limit: "See the soak table.",
    });
  return verdicts;
}

/** What is left of the agent-sized request's cost over the floor's (bench/micro/agent-phases.ts, the CPU profile in bench/README.md). */
const AGENT_LIMIT =
  "The proxy's own JSON work on such a request is well below the floor's: the client body's bounds and layout, the context answer's token ids checked sixteen bytes at a time in WebAssembly and kept as bytes, both worker bodies written as the client's bytes in parts (bench/micro/agent-phases.ts; issue #37, bench/RESULTS.md 'Agent-sized prompts and the floor'). What it pays over the floor is the fixed cost of every request (the 16-client chat row) and two copies the floor does natively: the client body's and the context answer's, each gathered into a buffer of its own when it comes in more than one socket read, whose fresh pages fault in on every request. In runs where it misses, the two are within the rounds' noise of each other (±5 %).";

/** Why a floor target is missed: the floor's own cost there, and what the proxy does on top, as measured. */
const FLOOR_LIMITS = {
  cpu: (proxy: number, floor: number): string =>
    `The floor itself costs ${Math.round(floor)} µs per request here, mostly its two native fetch calls; the proxy's other ${Math.round(proxy - floor)} µs are spread over its features, none large alone (CPU profile of both in bench/README.md, "Where the proxy's CPU goes"): per-leg deadlines, cancellation and retries' bookkeeping, placement, the client body's bounds and validation, the bounded read and lossless parse of the context answer, the request's log line, Prometheus metrics and trace context, and the garbage of all of them. What the profile showed as avoidable was cut (bench/README.md, "What each change bought").`,
  firstEvent: (r: BenchResults): string => firstEventLimit(r),
  memory: (proxy: number, floor: number, js: number): string =>
    `The floor itself holds ${floor.toFixed(1)} KiB per stream with Bun piping the body natively, and ${js.toFixed(1)} KiB (at 1,000 streams) when it reads the body through a JS stream, as the proxy must to watch frames and send keepalives. The proxy holds ${proxy.toFixed(1)} KiB. An idle stream keeps about 4.4 KB of live JavaScript cells (bench/micro/stream-objects.ts; 5.8 KB before issue #37's third session), but its RSS follows what its request allocated, not what it keeps: the collector does not move objects, so the cells a stream keeps pin the 16 KiB blocks its request's garbage was made in (made to allocate 300 more small objects per stream, none kept, the proxy's blocks per stream doubled; bench/micro/stream-allocations.ts counts ~790 cells allocated per opened stream against the floor's ~120). A full collection every 100 opened streams brought the level to 22–24 KiB at 1,000 and 13–17 KiB at 9,900, at the cost of a 25–85 ms pause each: not adopted (issue #37, bench/RESULTS.md "Agent-sized prompts and the floor").`,
  close: (proxy: number, floor: number): string =>
    proxy <= floor
      ? `The floor itself takes ${floor.toFixed(0)} ms in this run, the proxy no longer (${proxy.toFixed(0)} ms): on this machine, under this load, the target is below what Bun's own native abort of the same fetches takes.`
      : `The floor itself takes ${floor.toFixed(0)} ms: Bun aborts each fetch natively when its client goes, and that alone is above the target here. The proxy's legs are aborted by the same client abort event, but each leaving client's stream then runs its end in JS on the same thread (the relay's cancel, the request's end, its log line, metrics and telemetry): ${(proxy - floor).toFixed(0)} ms more here. Deferring those ends to a later turn, so every abort runs first, measured no better (bench/README.md).`,
};

/** What the first event waits for: the gap at one client, and what a JS-reading floor pays at many. */
function firstEventLimit(r: BenchResults): string {
  const s = r.streaming;
  const one = s?.firstEvents.find((f) => f.clients === 1);
  const many = s?.firstEvents.find((f) => f.clients === s.plan.concurrency);
  if (!s || !one || !many) return "";
  const cpu = r.latency?.find((p) => p.concurrency === many.clients);
  const cpuNote =
    cpu === undefined
      ? ""
      : ` (the latency table: ${Math.round(cpu.proxy.relayCpuUs)} against ${Math.round(cpu.floor.relayCpuUs)} µs per request at ${many.clients} clients)`;
  return `At 1 client the proxy's first event comes ${ms(one.proxy.p50 - one.floor.p50)} ms after the floor's (${ms(one.proxy.p50)} vs ${ms(one.floor.p50)} ms): the extra work of one request. At ${many.clients} clients (${ms(many.proxy.p50)} vs ${ms(many.floor.p50)} ms; the floor reading its stream in JS ${ms(many.floorJs.p50)} ms), an instrumented run finds nothing between the generation worker's first byte and the client's (first chunk read, then in the client's stream, 0.04 ms; bench/README.md, "The first-event path"): the first event waits for the two legs, that is for the request's setup CPU queued behind the other clients' requests${cpuNote}. It moves with the CPU-per-request target.`;
}

function jsRelayKib(r: BenchResults): number {
  const js = r.memory?.references.find((ref) => ref.relay === "js");
  return js === undefined ? Number.NaN : js.bytesPerStream / KIB;
}

/** The targets of the first performance issue, in absolute terms. */
export function judgeTargets(r: BenchResults): TargetVerdict[] {
  const at16 = r.latency?.find((p) => p.concurrency === 16);
  const perStream = r.memory?.levels.map((l) => l.proxyBytesPerStream / KIB);
  const worstPerStream = perStream === undefined ? undefined : Math.max(...perStream);
  const s = r.streaming;
  const proxyCpu = s?.proxy.cpuSecondsPer1000["proxy"];
  const genCpu = s?.proxy.cpuSecondsPer1000["generation"];
  return [
    {
      target: "added p50 latency ≤ 0.5 ms at concurrency 16",
      figure: at16 ? `${ms(at16.addedP50Us)} ms` : "—",
      pass: at16 ? at16.addedP50Us <= 500 : undefined,
      limit: latencyLimit(r),
    },
    {
      target: "added p99 latency ≤ 2 ms at concurrency 16",
      figure: at16 ? `${ms(at16.addedP99Us)} ms` : "—",
      pass: at16 ? at16.addedP99Us <= 2000 : undefined,
      limit: latencyLimit(r),
    },
    {
      target: "proxied streaming throughput ≥ 0.8 × direct",
      figure: s ? `${s.throughputRatio.toFixed(2)} ×` : "—",
      pass: s ? s.throughputRatio >= 0.8 : undefined,
      limit: streamingLimit(r),
    },
    {
      target: "≤ 20 KiB resident memory per idle open stream",
      figure: worstPerStream === undefined ? "—" : `${worstPerStream.toFixed(1)} KiB`,
      pass: worstPerStream === undefined ? undefined : worstPerStream <= 20,
      limit: memoryLimit(r),
    },
    {
      target: "proxy CPU per streamed request ≤ the generation worker's",
      figure: proxyCpu === undefined || genCpu === undefined ? "—" : `${proxyCpu.toFixed(3)} s vs ${genCpu.toFixed(3)} s per 1,000`,
      pass: proxyCpu === undefined || genCpu === undefined ? undefined : proxyCpu <= genCpu,
      limit:
        "The proxy pays for every streamed request the fixed cost of a non-streamed one (two worker calls, the context answer's JSON, the request log line) before relaying a single event: see the latency table.",
    },
    {
      target: "soak: RSS and sockets flat, sockets and in-flight back after",
      figure: r.soak ? soakFigure(r) : "—",
      pass: r.soak?.pass,
      limit: "See the soak table.",
    },
    {
      target: "TTFB: every status line within start wait + 50 ms (100 clients, 5 s prefill)",
      figure: r.ttfb ? r.ttfb.routes.map((route) => `${route.route} max ${route.statusLineMs.max.toFixed(0)} ms`).join(", ") : "—",
      pass: r.ttfb ? r.ttfb.routes.every((route) => route.pass) : undefined,
      limit: "See the TTFB table.",
    },
  ];
}

/** A saturated closed loop: each request waits behind the others for the cores. */
function latencyLimit(r: BenchResults): string {
  const p = r.latency?.find((point) => point.concurrency === 16);
  if (!p) return "";
  const cpu = p.proxy.cpuUsPerRequest["proxy"] ?? 0;
  const workers = (p.proxy.cpuUsPerRequest["context"] ?? 0) + (p.proxy.cpuUsPerRequest["generation"] ?? 0);
  const expected = ((16 / r.machine.cores) * cpu) / 1000;
  return `At 16 clients the ${r.machine.cores} cores are saturated (${Math.round(p.proxy.requestsPerSecond)} requests/s through the proxy), so each request queues behind the others and the added latency is about 16 / ${r.machine.cores} × the proxy's CPU per request = 16 / ${r.machine.cores} × ${Math.round(cpu)} µs ≈ ${expected.toFixed(1)} ms. The limit is that CPU: ${Math.round(cpu)} µs per request, against ${Math.round(workers)} µs for both emulated workers together.`;
}

function streamingLimit(r: BenchResults): string {
  const s = r.streaming;
  if (!s) return "";
  const direct = total(s.direct.cpuSecondsPer1000);
  const proxied = total(s.proxy.cpuSecondsPer1000);
  return `With the cores saturated, events/s follow the CPU a stream costs the whole machine: ${direct.toFixed(2)} s per 1,000 direct (workers and load generator) and ${proxied.toFixed(2)} s proxied, of which the proxy's ${(s.proxy.cpuSecondsPer1000["proxy"] ?? 0).toFixed(2)} s. The floor reaches ${s.floorThroughputRatio.toFixed(2)} × and its JS-stream variant ${(s.floorJs.eventsPerSecond / s.direct.eventsPerSecond).toFixed(2)} × (a relay takes the second request off the load generator, which direct makes itself); what the proxy spends beyond them is its relay CPU per stream, the next target's.`;
}

/** The native pipe runs no JS per chunk; any relay that reads its stream does, and pays the per-stream request cost too. */
function relayCpuLimit(s: NonNullable<BenchResults["streaming"]>): string {
  return `The native floor's figure (${s.floor.relayCpuSecondsPer1000.toFixed(2)} ms per stream, both legs included) has no JS per chunk at all; the same floor reading its stream through a JS pull stream spends ${s.floorJs.relayCpuSecondsPer1000.toFixed(2)} ms, and the proxy, which must read it to scan frames, send keepalives and bound silences, ${s.proxy.relayCpuSecondsPer1000.toFixed(2)} ms, about half of it the non-streamed request cost of the latency table (its two legs, end and log line).`;
}

function total(cpu: Readonly<Record<string, number>>): number {
  return Object.values(cpu).reduce((a, b) => a + b, 0);
}

function memoryLimit(r: BenchResults): string {
  const refs = r.memory?.references ?? [];
  const kib = (relay: "native" | "js"): number => (refs.find((ref) => ref.relay === relay)?.bytesPerStream ?? Number.NaN) / KIB;
  const proxy = Math.max(...(r.memory?.levels ?? []).map((l) => l.proxyBytesPerStream / KIB));
  const js = kib("js");
  const floor = js > 20 ? "already above the target" : "within the target";
  return `A minimal Bun relay of the same streams holds ${js.toFixed(1)} KiB per stream when it reads the upstream body in JS, as the proxy must to watch frames and send keepalives (${floor}), and ${kib("native").toFixed(1)} KiB when Bun pipes the body natively (see the reference table). The other ${(proxy - js).toFixed(1)} KiB are the proxy's own per-request state: request context, timers, abort signals, hooks and closures.`;
}

function soakFigure(r: BenchResults): string {
  const soak = r.soak;
  if (!soak) return "—";
  return `RSS ${signed(mib(soak.rss.growth))} MiB, sockets ${signed(soak.sockets.growth.toFixed(0))} (last vs first third); after: ${soak.after.clientSockets} client sockets, ${soak.after.proxyInFlight} in flight`;
}

function mib(bytes: number): string {
  return (bytes / (1024 * 1024)).toFixed(1);
}

function signed(text: string): string {
  return text.startsWith("-") ? text : `+${text}`;
}

function ms(us: number): string {
  return (us / 1000).toFixed(3);
}
