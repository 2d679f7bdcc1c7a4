/** The published charts, from the scenario results. */

import type { LatencyPoint } from "../scenarios/latency.ts";
import type { MemoryResult } from "../scenarios/memory.ts";
import type { SoakResult } from "../scenarios/soak.ts";
import { lineChart } from "./svg-chart.ts";

const MIB = 1024 * 1024;

export function latencyChart(points: readonly LatencyPoint[]): string {
  return lineChart({
    title: "Added latency of a non-streamed chat request",
    xLabel: "concurrent clients (log scale)",
    yLabel: "proxy minus direct (ms)",
    xScale: "log2",
    series: [
      { name: "added p50", color: "#1f77b4", points: points.map((p) => [p.concurrency, p.addedP50Us / 1000]) },
      { name: "added p99", color: "#d62728", points: points.map((p) => [p.concurrency, p.addedP99Us / 1000]), dashed: true },
    ],
    reference: { y: 0.5, label: "p50 target 0.5 ms (at 16)" },
  });
}

/** Issue #18's first target: the proxy's CPU per non-streamed request over the floor relay's, from the same rounds. */
export function floorChart(points: readonly LatencyPoint[]): string {
  return lineChart({
    title: "Proxy CPU per non-streamed request ÷ the floor's",
    xLabel: "concurrent clients (log scale)",
    yLabel: "proxy CPU ÷ floor CPU",
    xScale: "log2",
    series: [{ name: "proxy ÷ floor", color: "#1f77b4", points: points.map((p) => [p.concurrency, p.cpuOverFloor]) }],
    reference: { y: 1.5, label: "target 1.5 ×" },
  });
}

export function memoryChart(memory: MemoryResult): string {
  const levels = memory.levels;
  const budget = 14 * 1024;
  return lineChart({
    title: "Resident memory with open silent streams",
    xLabel: "open streams",
    yLabel: "RSS (MiB)",
    xScale: "linear",
    series: [
      {
        name: "proxy",
        color: "#1f77b4",
        points: [[0, memory.baseline.proxyRssBytes / MIB], ...levels.map((l): [number, number] => [l.streams, l.proxyRssBytes / MIB])],
      },
      {
        name: "floor's growth per stream, from the proxy's baseline",
        color: "#ff7f0e",
        points: [
          [0, memory.baseline.proxyRssBytes / MIB],
          ...memory.references
            .filter((ref) => ref.relay === "native")
            .map((ref): [number, number] => [ref.streams, (memory.baseline.proxyRssBytes + ref.bytesPerStream * ref.streams) / MIB]),
        ],
        dashed: true,
      },
      {
        name: "generation worker",
        color: "#2ca02c",
        points: [
          [0, memory.baseline.generationRssBytes / MIB],
          ...levels.map((l): [number, number] => [l.streams, l.generationRssBytes / MIB]),
        ],
      },
      {
        name: "proxy at 14 KiB/stream (target)",
        color: "#999999",
        dashed: true,
        points: [
          [0, memory.baseline.proxyRssBytes / MIB],
          ...levels.map((l): [number, number] => [l.streams, (memory.baseline.proxyRssBytes + budget * l.streams) / MIB]),
        ],
      },
    ],
  });
}

export function soakChart(soak: SoakResult): string {
  return lineChart({
    title: `Soak: ${soak.plan.minutes} min at ${soak.plan.ratePerSecond} requests/s with faults`,
    xLabel: "seconds",
    yLabel: "MiB / sockets",
    xScale: "linear",
    series: [
      { name: "proxy RSS (MiB)", color: "#1f77b4", points: soak.samples.map((s) => [s.t, s.proxyRss / MIB]) },
      { name: "proxy sockets", color: "#ff7f0e", points: soak.samples.map((s) => [s.t, s.proxySockets]) },
      { name: "in flight", color: "#999999", dashed: true, points: soak.samples.map((s) => [s.t, s.inFlight]) },
    ],
  });
}
