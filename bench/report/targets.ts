/** The targets, judged from one run's figures. */

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
      limit: "The proxy pays for every streamed request the fixed cost of a non-streamed one (two worker calls, the context answer's JSON, the request log line) before relaying a single event: see the latency table.",
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
  return `With the cores saturated, events/s follow the CPU a request costs the whole machine: ${direct.toFixed(2)} s per 1,000 direct (workers and load generator) and ${proxied.toFixed(2)} s proxied, of which the proxy's ${(s.proxy.cpuSecondsPer1000["proxy"] ?? 0).toFixed(2)} s; ${direct.toFixed(2)} / ${proxied.toFixed(2)} = ${(direct / proxied).toFixed(2)}.`;
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
