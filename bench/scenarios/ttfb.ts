/**
 * (d) Time to first byte under a long prefill: 100 concurrent streamed requests whose context
 * phase takes 5 s, per route. Every client must have its status line within the proxy's
 * stream start wait + 50 ms, and every stream must then complete.
 */

import type { Cluster } from "../cluster/cluster.ts";
import { HttpConnection } from "../http/connection.ts";
import { exchange, postRequest, type Exchange } from "../http/exchange.ts";
import { endpointOf, type Workload } from "../load/paths.ts";
import { chatStream, messagesStream, responsesStream } from "../load/workloads.ts";
import { summarize, type Summary } from "../lib/stats.ts";

export interface TtfbPlan {
  readonly clients: number;
  readonly prefillMs: number;
  /** The proxy's --stream-start-wait-ms. */
  readonly startWaitMs: number;
  readonly slackMs: number;
}

export interface TtfbRoute {
  readonly route: string;
  readonly clients: number;
  /** Status line arrival after the request was written, ms. */
  readonly statusLineMs: Summary;
  readonly completeMs: Summary;
  /** Clients whose status line came within start wait + slack. */
  readonly inTime: number;
  /** Clients whose stream ended with a 200 and at least one event after the keepalives. */
  readonly completed: number;
  readonly errorSamples: readonly string[];
  readonly pass: boolean;
}

export interface TtfbResult {
  readonly plan: TtfbPlan;
  readonly routes: readonly TtfbRoute[];
}

const TOKENS = 8;

export async function runTtfb(cluster: Cluster, plan: TtfbPlan): Promise<TtfbResult> {
  const directive = `ctx.prefill_ms=${plan.prefillMs}`;
  const workloads = [responsesStream(TOKENS, directive), messagesStream(TOKENS, directive), chatStream(TOKENS, directive)];
  const routes: TtfbRoute[] = [];
  for (const workload of workloads) routes.push(await runRoute(cluster, plan, workload));
  return { plan, routes };
}

async function runRoute(cluster: Cluster, plan: TtfbPlan, workload: Workload): Promise<TtfbRoute> {
  const proxy = endpointOf(cluster.proxy.url);
  // Connections first, so the figure is the proxy's answer time, not connection set-up.
  const conns = await Promise.all(Array.from({ length: plan.clients }, () => HttpConnection.open(proxy.hostname, proxy.port)));
  const request = postRequest(proxy.host, workload.route, JSON.stringify(workload.body));
  const settled = await Promise.allSettled(conns.map((conn) => exchange(conn, request)));
  for (const conn of conns) conn.close();
  const answers = settled.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const errorSamples = settled.flatMap((s) => (s.status === "rejected" ? [String(s.reason)] : [])).slice(0, 5);
  const statusLine = answers.map((a) => a.headAt - a.sentAt);
  const bound = plan.startWaitMs + plan.slackMs;
  const inTime = statusLine.filter((ms) => ms <= bound).length;
  const completed = answers.filter((a) => completedStream(a, plan.prefillMs)).length;
  for (const a of answers) if (a.status !== 200 && errorSamples.length < 5) errorSamples.push(`HTTP ${a.status}`);
  return {
    route: workload.route,
    clients: plan.clients,
    statusLineMs: summarize(statusLine),
    completeMs: summarize(answers.map((a) => a.endAt - a.sentAt)),
    inTime,
    completed,
    errorSamples,
    pass: inTime === plan.clients && completed === plan.clients,
  };
}

/** A 200 that lasted at least the prefill and carried events beyond its opening. */
function completedStream(answer: Exchange, prefillMs: number): boolean {
  return answer.status === 200 && answer.endAt - answer.sentAt >= prefillMs && answer.frames > TOKENS;
}
