/**
 * (g) Upstream close time: 1,000 clients hold streams the generation worker keeps silent, then
 * all leave at once; how long until the relay (proxy or floor) has closed every one of its
 * connections to the generation worker. Proxy and floor take turns, the order alternating.
 */

import { readFileSync } from "node:fs";
import type { Cluster } from "../cluster/cluster.ts";
import { OpenStreams } from "../load/open-streams.ts";
import { endpointOf, type Endpoint } from "../load/paths.ts";
import { chatStream } from "../load/workloads.ts";
import { median } from "../lib/stats.ts";
import { floorOf } from "./latency.ts";

export interface ClosePlan {
  readonly streams: number;
  readonly repetitions: number;
}

export interface CloseRun {
  readonly relay: "proxy" | "floor";
  /** Streams that had their first events before the clients left. */
  readonly open: number;
  /** Relay → generation connections open (streams and idle pools), just before the clients left. */
  readonly upstream: number;
  /** Clients gone → the last of the streams' connections out of ESTABLISHED; Infinity if some never closed. */
  readonly closeMs: number;
}

export interface CloseResult {
  readonly plan: ClosePlan;
  readonly runs: readonly CloseRun[];
  readonly proxyMedianMs: number;
  readonly floorMedianMs: number;
  /** How often the connection table was read while waiting: the figures' resolution. */
  readonly pollMs: number;
}

const FRAMES_BEFORE_SILENCE = 2;
const OPEN_TIMEOUT_MS = 60_000;
const CLOSE_TIMEOUT_MS = 10_000;
const POLL_MS = 2;

export async function runClose(cluster: Cluster, plan: ClosePlan): Promise<CloseResult> {
  const generationPort = endpointOf(cluster.generation.url).port;
  const relays = { proxy: endpointOf(cluster.proxy.url), floor: endpointOf(floorOf(cluster).url) };
  const runs: CloseRun[] = [];
  for (let rep = 0; rep < plan.repetitions; rep++) {
    const order = rep % 2 === 0 ? (["proxy", "floor"] as const) : (["floor", "proxy"] as const);
    for (const relay of order) runs.push(await closeRun(relay, relays[relay], generationPort, plan.streams));
  }
  const medianOf = (relay: CloseRun["relay"]): number => median(runs.filter((r) => r.relay === relay).map((r) => r.closeMs));
  return { plan, runs, proxyMedianMs: medianOf("proxy"), floorMedianMs: medianOf("floor"), pollMs: POLL_MS };
}

async function closeRun(relay: CloseRun["relay"], endpoint: Endpoint, generationPort: number, count: number): Promise<CloseRun> {
  const streams = new OpenStreams(endpoint, chatStream(8, "gen.silence_ms=300000 gen.silence_after=1"));
  await streams.growTo(count);
  const open = await streams.waitFor(FRAMES_BEFORE_SILENCE, OPEN_TIMEOUT_MS);
  const upstream = establishedTo(generationPort);
  // One connection per open stream must go; idle pooled ones (either relay's) may stay.
  const closed = upstream - open;
  const left = performance.now();
  streams.closeAll();
  let closeMs = Number.POSITIVE_INFINITY;
  while (performance.now() - left < CLOSE_TIMEOUT_MS) {
    if (establishedTo(generationPort) <= closed) {
      closeMs = performance.now() - left;
      break;
    }
    await Bun.sleep(POLL_MS);
  }
  // Let the closed sockets drain before the next run counts its idle pool.
  await Bun.sleep(1000);
  return { relay, open, upstream, closeMs };
}

/**
 * Connections in ESTABLISHED whose remote end is the generation worker's port: the client ends
 * of relay → worker connections (the worker's own ends have the port as their local one). A
 * socket the relay closed is in FIN_WAIT or later, so it no longer counts.
 */
function establishedTo(port: number): number {
  const needle = `:${port.toString(16).toUpperCase().padStart(4, "0")} 01 `;
  let count = 0;
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    const text = readFileSync(table, "latin1");
    for (let i = text.indexOf(needle); i >= 0; i = text.indexOf(needle, i + needle.length)) count++;
  }
  return count;
}
