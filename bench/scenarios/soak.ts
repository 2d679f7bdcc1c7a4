/**
 * (e) Soak: a steady open-loop rate of mixed requests (see soak-mix.ts) for N minutes, one
 * connection per request, with the proxy's RSS and open sockets sampled every 10 s. Both must
 * stay flat, sockets must come back once the load stops, and the proxy's in-flight
 * accounting must return to zero.
 */

import type { Cluster } from "../cluster/cluster.ts";
import { rssBytes, socketBreakdown, socketCount } from "../cluster/proc-stats.ts";
import { HttpConnection } from "../http/connection.ts";
import { exchange, postRequest } from "../http/exchange.ts";
import { endpointOf } from "../load/paths.ts";
import { pickKind, seededRandom, SOAK_KINDS, type SoakKind } from "../load/soak-mix.ts";
import { flatness, type Flatness } from "../lib/flatness.ts";

export interface SoakPlan {
  readonly minutes: number;
  readonly ratePerSecond: number;
  readonly sampleSeconds: number;
  readonly warmupSeconds: number;
  /** A request is not started while this many are in flight (counted as skipped). */
  readonly maxInFlight: number;
  readonly seed: number;
}

export interface SoakSample {
  readonly t: number;
  readonly proxyRss: number;
  readonly proxySockets: number;
  /** Of those, connections from clients and to workers. */
  readonly clientSockets: number;
  readonly upstreamSockets: number;
  readonly generationRss: number;
  readonly contextRss: number;
  readonly inFlight: number;
  readonly finished: number;
}

export interface KindOutcome {
  started: number;
  ok: number;
  left: number;
  broken: number;
  readonly statuses: Record<string, number>;
}

export interface SoakResult {
  readonly plan: SoakPlan;
  readonly samples: readonly SoakSample[];
  readonly outcomes: Readonly<Record<string, KindOutcome>>;
  readonly skipped: number;
  readonly rss: Flatness;
  readonly sockets: Flatness;
  readonly before: { readonly proxySockets: number };
  readonly after: {
    readonly proxySockets: number;
    readonly clientSockets: number;
    readonly upstreamSockets: number;
    readonly proxyInFlight: number;
    readonly proxyRss: number;
  };
  readonly pass: boolean;
}

const RSS_TOLERANCE_BYTES = 8 * 1024 * 1024;
const SOCKET_TOLERANCE = 16;
const TICK_MS = 20;
const DRAIN_TIMEOUT_MS = 15_000;

export async function runSoak(cluster: Cluster, plan: SoakPlan): Promise<SoakResult> {
  const proxy = endpointOf(cluster.proxy.url);
  const random = seededRandom(plan.seed);
  const outcomes: Record<string, KindOutcome> = Object.fromEntries(
    SOAK_KINDS.map((kind) => [kind.name, { started: 0, ok: 0, left: 0, broken: 0, statuses: {} }]),
  );
  const requests = new Map(
    SOAK_KINDS.map((kind) => [kind.name, postRequest(proxy.host, kind.workload.route, JSON.stringify(kind.workload.body))]),
  );
  const state = { inFlight: 0, finished: 0, skipped: 0 };
  const samples: SoakSample[] = [];
  const beforeSockets = socketCount(cluster.pids.proxy);
  const started = performance.now();
  const sample = (): void => {
    const sockets = socketBreakdown(cluster.pids.proxy, proxy.port);
    samples.push({
      t: (performance.now() - started) / 1000,
      proxyRss: rssBytes(cluster.pids.proxy),
      proxySockets: socketCount(cluster.pids.proxy),
      clientSockets: sockets.clients,
      upstreamSockets: sockets.upstream,
      generationRss: rssBytes(cluster.pids.generation),
      contextRss: rssBytes(cluster.pids.context),
      inFlight: state.inFlight,
      finished: state.finished,
    });
  };
  const one = async (kind: SoakKind): Promise<void> => {
    const outcome = outcomes[kind.name] as KindOutcome;
    outcome.started++;
    state.inFlight++;
    let left = false;
    try {
      const conn = await HttpConnection.open(proxy.hostname, proxy.port);
      const timer = kind.leaveAfterMs ? setTimeout(() => ((left = true), conn.abort()), between(random, kind.leaveAfterMs)) : undefined;
      const answer = await exchange(conn, requests.get(kind.name) as Uint8Array);
      clearTimeout(timer);
      conn.close();
      if (answer.status === 200) outcome.ok++;
      else outcome.statuses[answer.status] = (outcome.statuses[answer.status] ?? 0) + 1;
    } catch {
      if (left) outcome.left++;
      else outcome.broken++;
    } finally {
      state.inFlight--;
      state.finished++;
    }
  };
  sample();
  const sampler = setInterval(sample, plan.sampleSeconds * 1000);
  const durationMs = plan.minutes * 60_000;
  let sent = 0;
  while (performance.now() - started < durationMs) {
    const due = Math.floor(((performance.now() - started) / 1000) * plan.ratePerSecond);
    for (; sent < due; sent++) {
      if (state.inFlight >= plan.maxInFlight) state.skipped++;
      else void one(pickKind(random));
    }
    await Bun.sleep(TICK_MS);
  }
  const drainDeadline = performance.now() + DRAIN_TIMEOUT_MS;
  while (state.inFlight > 0 && performance.now() < drainDeadline) await Bun.sleep(50);
  clearInterval(sampler);
  sample();
  await Bun.sleep(3000);
  // Sockets first: the /cluster_info call below is itself a client connection.
  const breakdown = socketBreakdown(cluster.pids.proxy, proxy.port);
  const proxyInFlight = await inFlightOf(cluster.proxy.url);
  const after = {
    proxySockets: socketCount(cluster.pids.proxy),
    clientSockets: breakdown.clients,
    upstreamSockets: breakdown.upstream,
    proxyInFlight,
    proxyRss: rssBytes(cluster.pids.proxy),
  };
  const during = samples.slice(0, -1);
  const rss = flatness(
    during.map((s) => s.t),
    during.map((s) => s.proxyRss),
    plan.warmupSeconds,
    RSS_TOLERANCE_BYTES,
  );
  const sockets = flatness(
    during.map((s) => s.t),
    during.map((s) => s.proxySockets),
    plan.warmupSeconds,
    SOCKET_TOLERANCE,
  );
  // Idle keep-alive connections to the workers may stay pooled; no client connection may.
  const settled = after.clientSockets === 0 && after.proxySockets <= beforeSockets + SOCKET_TOLERANCE && after.proxyInFlight === 0;
  return {
    plan,
    samples,
    outcomes,
    skipped: state.skipped,
    rss,
    sockets,
    before: { proxySockets: beforeSockets },
    after,
    pass: rss.flat && sockets.flat && settled,
  };
}

function between(random: () => number, [min, max]: readonly [number, number]): number {
  return min + random() * (max - min);
}

/** Sum of the proxy's own in-flight reservations over every worker (GET /cluster_info). */
async function inFlightOf(proxyUrl: string): Promise<number> {
  const info: unknown = await fetch(`${proxyUrl}/cluster_info`, { headers: { connection: "close" } }).then((r) => r.json());
  let total = 0;
  const visit = (value: unknown): void => {
    if (Array.isArray(value)) value.forEach(visit);
    else if (typeof value === "object" && value !== null) {
      for (const [key, inner] of Object.entries(value)) {
        if (key === "in_flight" && typeof inner === "number") total += inner;
        else visit(inner);
      }
    }
  };
  visit(info);
  return total;
}
