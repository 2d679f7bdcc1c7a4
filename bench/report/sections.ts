/** One Markdown table per scenario. */

import type { CloseResult } from "../scenarios/close.ts";
import type { LatencyPoint } from "../scenarios/latency.ts";
import type { MemoryResult } from "../scenarios/memory.ts";
import type { SoakResult } from "../scenarios/soak.ts";
import type { StreamingResult } from "../scenarios/streaming.ts";
import type { TtfbResult } from "../scenarios/ttfb.ts";

const KIB = 1024;
const MIB = 1024 * 1024;

function line(cells: readonly string[]): string {
  return `| ${cells.join(" | ")} |`;
}

export function table(head: readonly string[], rows: readonly (readonly string[])[]): string {
  return [line(head), line(head.map(() => "---")), ...rows.map(line)].join("\n");
}

const n0 = (v: number): string => (Number.isFinite(v) ? Math.round(v).toLocaleString("en-US") : "—");
const n1 = (v: number): string => (Number.isFinite(v) ? v.toFixed(1) : "—");
const n2 = (v: number): string => (Number.isFinite(v) ? v.toFixed(2) : "—");
const n3 = (v: number): string => (Number.isFinite(v) ? v.toFixed(3) : "—");
const pct = (v: number): string => `${Math.round(v * 100)} %`;

export function latencyTable(points: readonly LatencyPoint[]): string {
  return table(
    [
      "clients",
      "direct p50 / p99 µs",
      "floor p50 / p99 µs",
      "proxy p50 / p99 µs",
      "added p50 µs floor / proxy",
      "added p99 µs proxy",
      "req/s direct / floor / proxy",
      "relay CPU µs/req floor / proxy",
      "proxy ÷ floor CPU",
      "workers CPU µs/req direct / proxied",
      "other load",
    ],
    points.map((p) => [
      String(p.concurrency),
      `${n0(p.direct.latencyUs.p50)} / ${n0(p.direct.latencyUs.p99)}`,
      `${n0(p.floor.latencyUs.p50)} / ${n0(p.floor.latencyUs.p99)}`,
      `${n0(p.proxy.latencyUs.p50)} / ${n0(p.proxy.latencyUs.p99)}`,
      `${n0(p.floorAddedP50Us)} / ${n0(p.addedP50Us)}`,
      n0(p.addedP99Us),
      `${n0(p.direct.requestsPerSecond)} / ${n0(p.floor.requestsPerSecond)} / ${n0(p.proxy.requestsPerSecond)}`,
      `${n0(p.floor.relayCpuUs)} / ${n0(p.proxy.relayCpuUs)}`,
      `${n2(p.cpuOverFloor)} ×`,
      `${n0(workers(p.direct.cpuUsPerRequest))} / ${n0(workers(p.proxy.cpuUsPerRequest))}`,
      `${pct(p.direct.foreignLoad)} / ${pct(p.floor.foreignLoad)} / ${pct(p.proxy.foreignLoad)}`,
    ]),
  );
}

function workers(cpu: Readonly<Record<string, number>>): number {
  return (cpu["context"] ?? 0) + (cpu["generation"] ?? 0);
}

function streamRow(name: string, f: StreamingResult["direct"]): string[] {
  return [
    name,
    n0(f.requests),
    n0(f.eventsPerSecond),
    n1(f.eventsPerRequest),
    `${n2(f.firstEventUs.p50 / 1000)} / ${n2(f.firstEventUs.p99 / 1000)}`,
    n0(f.durationUs.p50 / 1000),
    n3(f.relayCpuSecondsPer1000),
    n3(f.cpuSecondsPer1000["context"] ?? 0),
    n3(f.cpuSecondsPer1000["generation"] ?? 0),
    n3(f.cpuSecondsPer1000["loadgen"] ?? 0),
    String(f.errors),
  ];
}

export function streamingTable(s: StreamingResult): string {
  return table(
    [
      "path",
      "requests",
      "events/s",
      "events/request",
      "first event p50 / p99 ms (saturated)",
      "stream p50 ms",
      "relay CPU s/1k",
      "context CPU s/1k",
      "generation CPU s/1k",
      "load generator CPU s/1k",
      "errors",
    ],
    [streamRow("direct", s.direct), streamRow("floor", s.floor), streamRow("floor, JS stream", s.floorJs), streamRow("proxy", s.proxy)],
  );
}

function firstEventCell(f: StreamingResult["firstEvents"][number]["direct"]): string {
  return `${n2(f.p50 / 1000)} / ${n2(f.p90 / 1000)} / ${n2(f.p99 / 1000)}`;
}

export function firstEventTable(s: StreamingResult): string {
  return table(
    ["clients", "streams per path", "direct p50 / p90 / p99 ms", "floor", "floor, JS stream", "proxy", "proxy − floor p50 ms"],
    s.firstEvents.map((f) => [
      String(f.clients),
      n0(f.proxy.count),
      firstEventCell(f.direct),
      firstEventCell(f.floor),
      firstEventCell(f.floorJs),
      firstEventCell(f.proxy),
      n2((f.proxy.p50 - f.floor.p50) / 1000),
    ]),
  );
}

export function memoryTable(m: MemoryResult): string {
  const rows = [
    [
      "0 (baseline)",
      "—",
      n1(m.baseline.proxyRssBytes / MIB),
      "—",
      n1(m.baseline.generationRssBytes / MIB),
      "—",
      String(m.baseline.proxySockets),
    ],
    ...m.levels.map((l) => [
      n0(l.streams),
      n0(l.alive),
      n1(l.proxyRssBytes / MIB),
      n1(l.proxyBytesPerStream / KIB),
      n1(l.generationRssBytes / MIB),
      n1(l.generationBytesPerStream / KIB),
      n0(l.proxySockets),
    ]),
    ["after all left", "—", n1(m.after.proxyRssBytes / MIB), "—", "—", "—", String(m.after.proxySockets)],
  ];
  return table(
    [
      "open streams",
      "alive (keepalive seen)",
      "proxy RSS MiB",
      "proxy KiB/stream",
      "generation RSS MiB",
      "generation KiB/stream",
      "proxy sockets",
    ],
    rows,
  );
}

export function memoryReferenceTable(m: MemoryResult): string {
  const names = {
    native: "floor: native pipe (`new Response(upstream.body)`)",
    js: "floor relay with a JS pull stream over the upstream reader",
  };
  return table(
    ["relay, same streams and workers", "open streams", "alive", "KiB/stream"],
    m.references.map((r) => [names[r.relay], n0(r.streams), n0(r.alive), n1(r.bytesPerStream / KIB)]),
  );
}

export function ttfbTable(t: TtfbResult): string {
  return table(
    [
      "route",
      "clients",
      "status line p50 / max ms",
      "within " + String(t.plan.startWaitMs + t.plan.slackMs) + " ms",
      "complete p50 / max ms",
      "completed",
      "pass",
    ],
    t.routes.map((r) => [
      `\`${r.route}\``,
      String(r.clients),
      `${n0(r.statusLineMs.p50)} / ${n0(r.statusLineMs.max)}`,
      String(r.inTime),
      `${n0(r.completeMs.p50)} / ${n0(r.completeMs.max)}`,
      String(r.completed),
      r.pass ? "yes" : "**no**",
    ]),
  );
}

export function soakTable(s: SoakResult): string {
  const first = s.samples[0];
  const last = s.samples.at(-1);
  const maxOf = (pick: (x: SoakResult["samples"][number]) => number): number => Math.max(...s.samples.map(pick));
  return table(
    ["figure", "value"],
    [
      ["requests started / skipped", `${n0(sumOf(s, "started"))} / ${n0(s.skipped)}`],
      [
        "proxy RSS first / max / last sample MiB",
        `${n1((first?.proxyRss ?? 0) / MIB)} / ${n1(maxOf((x) => x.proxyRss) / MIB)} / ${n1((last?.proxyRss ?? 0) / MIB)}`,
      ],
      [
        "proxy RSS growth, last vs first third after warm-up",
        `${n1(s.rss.growth / MIB)} MiB (slope ${n1(s.rss.slopePerMinute / MIB)} MiB/min)`,
      ],
      [
        "proxy sockets first / max / last sample",
        `${first?.proxySockets ?? 0} / ${maxOf((x) => x.proxySockets)} / ${last?.proxySockets ?? 0}`,
      ],
      ["proxy sockets growth, last vs first third", `${n1(s.sockets.growth)} (slope ${n1(s.sockets.slopePerMinute)}/min)`],
      [
        "proxy sockets before / 3 s after the load",
        `${s.before.proxySockets} / ${s.after.proxySockets} (client connections ${s.after.clientSockets}, pooled to workers ${s.after.upstreamSockets})`,
      ],
      ["proxy in-flight reservations after the load", String(s.after.proxyInFlight)],
      ["verdict", s.pass ? "flat" : "**not flat**"],
    ],
  );
}

export function soakOutcomes(s: SoakResult): string {
  return table(
    ["request kind", "started", "200", "client left", "HTTP errors", "connection broken"],
    Object.entries(s.outcomes).map(([name, o]) => [
      name,
      n0(o.started),
      n0(o.ok),
      n0(o.left),
      Object.entries(o.statuses)
        .map(([status, count]) => `${status}: ${count}`)
        .join(", ") || "0",
      n0(o.broken),
    ]),
  );
}

function sumOf(s: SoakResult, key: "started"): number {
  return Object.values(s.outcomes).reduce((sum, o) => sum + o[key], 0);
}

export function closeTable(c: CloseResult): string {
  return table(
    ["run", "relay", "streams open", "upstream connections open", "all closed after ms"],
    c.runs.map((r, i) => [
      String(Math.floor(i / 2) + 1),
      r.relay,
      n0(r.open),
      n0(r.upstream),
      Number.isFinite(r.closeMs) ? n1(r.closeMs) : "not within 10 s",
    ]),
  );
}
