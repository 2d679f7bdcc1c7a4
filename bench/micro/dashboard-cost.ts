/**
 * What the dashboard's data collection costs per request, and that its memory stays flat with
 * uptime. Run: `npx bun bench/micro/dashboard-cost.ts`.
 *
 * Per request it replays what a streamed, disaggregated request reports to the recorder: a
 * context attempt and completion, a generation attempt and completion, a stream opened and
 * closed, the end (one in 20 failed). The cost is measured two ways: the recorder's calls alone,
 * and the same request's hooks with the dashboard on minus with it off (the fan-out included).
 * The clock is simulated (one request per millisecond of "uptime", a tick per simulated second),
 * so the memory part covers hours of uptime in seconds.
 */

import { DashboardRecorder, type DashboardSource } from "../../src/dashboard/recorder.ts";
import { createMetrics } from "../../src/observability/metrics.ts";
import { metricsHooks } from "../../src/request/metrics-hooks.ts";
import type { EndedRequest } from "../../src/observability/traffic-observer.ts";

const WORKERS = 8;
const clock = { now: Date.UTC(2026, 0, 1) };
const source: DashboardSource = {
  version: "bench",
  pid: process.pid,
  inFlight: () => 0,
  draining: () => false,
  admission: () => ({ inFlight: 0, waiting: 0, limit: 0 }),
  workers: () =>
    Array.from({ length: WORKERS }, (_, i) => ({
      role: i % 2 === 0 ? ("context" as const) : ("generation" as const),
      url: `http://w${i}:8000`,
      id: undefined,
      ready: true,
      inFlight: 0,
      version: undefined,
    })),
  discovery: () => ({ source: "static" }),
  protectedByKeys: () => false,
};
const recorder = new DashboardRecorder(source, () => clock.now);
// The pipeline passes the pool's own origin strings, not fresh ones.
const ORIGINS = source.workers().map((worker) => worker.url);
const metrics = createMetrics({ workers: () => [] });
const ok: EndedRequest = {
  route: "/v1/chat/completions",
  outcome: "ok",
  status: 200,
  disaggRequestId: 1n,
  worker: "http://w1:8000",
  message: undefined,
  code: undefined,
  ttftMs: 120,
  durationMs: 900,
};
const failed: EndedRequest = {
  ...ok,
  outcome: "worker_error",
  status: 502,
  message: "The generation worker answered 500",
  code: "WORKER_HTTP_ERROR",
};

function oneRequest(i: number, withDashboard: boolean): void {
  clock.now += 1;
  if (clock.now % 1000 === 0) recorder.tick();
  const ctxWorker = ORIGINS[(i % (WORKERS / 2)) * 2]!;
  const genWorker = ORIGINS[(i % (WORKERS / 2)) * 2 + 1]!;
  const hooks = metricsHooks(metrics, "/v1/chat/completions", withDashboard ? recorder : undefined);
  hooks.legAttempt("context", ctxWorker);
  hooks.legCompleted("context", 0.1, 0.1, ctxWorker);
  hooks.legAttempt("generation", genWorker);
  hooks.streamOpened();
  hooks.legCompleted("generation", 0.02, 0.8, genWorker);
  hooks.streamClosed();
  if (withDashboard) recorder.requestEnded(i % 20 === 0 ? failed : ok);
}

function recorderOnly(i: number): void {
  clock.now += 1;
  if (clock.now % 1000 === 0) recorder.tick();
  const ctxWorker = ORIGINS[(i % (WORKERS / 2)) * 2]!;
  const genWorker = ORIGINS[(i % (WORKERS / 2)) * 2 + 1]!;
  recorder.legAttempt("context", ctxWorker);
  recorder.legCompleted("context", ctxWorker, 0.1, 0.1);
  recorder.legAttempt("generation", genWorker);
  recorder.streamOpened();
  recorder.legCompleted("generation", genWorker, 0.02, 0.8);
  recorder.streamClosed();
  recorder.requestEnded(i % 20 === 0 ? failed : ok);
}

function nsPerRequest(run: (i: number) => void, n: number): number {
  for (let i = 0; i < 50_000; i++) run(i);
  const start = Bun.nanoseconds();
  for (let i = 0; i < n; i++) run(i);
  return (Bun.nanoseconds() - start) / n;
}

function heapMiB(): number {
  Bun.gc(true);
  return process.memoryUsage().heapUsed / 2 ** 20;
}

const N = Number(process.env["N"] ?? 1_000_000);
const rounds = 7;
const alone: number[] = [];
const on: number[] = [];
const off: number[] = [];
for (let r = 0; r < rounds; r++) {
  alone.push(nsPerRequest(recorderOnly, N));
  // On and off interleaved, so machine load hits both alike.
  on.push(nsPerRequest((i) => oneRequest(i, true), N));
  off.push(nsPerRequest((i) => oneRequest(i, false), N));
}
const sorted = (values: number[]): number[] => values.toSorted((a, b) => a - b);
const show = (values: number[]): string =>
  `min ${sorted(values)[0]!.toFixed(0)} ns, median ${sorted(values)[Math.floor(values.length / 2)]!.toFixed(0)} ns`;
console.log(`${rounds} rounds of ${N} requests; Bun ${Bun.version}`);
console.log(`the recorder's calls per request:          ${show(alone)}`);
console.log(`a request's hooks, dashboard off:         ${show(off)}`);
console.log(`a request's hooks, dashboard on:          ${show(on)}`);
console.log(`on − off (min − min):                     ${(sorted(on)[0]! - sorted(off)[0]!).toFixed(0)} ns`);

// Memory with uptime: simulated hours at 1000 requests per simulated second.
const before = heapMiB();
const hours: string[] = [];
for (let hour = 1; hour <= Number(process.env["HOURS"] ?? 6); hour++) {
  for (let i = 0; i < 3600 * 1000; i++) recorderOnly(i);
  const snapshot = JSON.stringify(recorder.snapshot());
  hours.push(`${hour} h: heap ${heapMiB().toFixed(2)} MiB, snapshot ${(snapshot.length / 1024).toFixed(1)} KiB`);
}
console.log(`heap before: ${before.toFixed(2)} MiB`);
for (const line of hours) console.log(line);
