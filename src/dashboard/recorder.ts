import type { Role } from "../config/types.ts";
import type { Outcome } from "../errors.ts";
import type { EndedRequest, TrafficObserver } from "../observability/traffic-observer.ts";
import { FailureLog } from "./failure-log.ts";
import { SlotHistograms } from "./latency-histogram.ts";
import { SeriesRing } from "./series-ring.ts";
import { SlotCounts } from "./slot-counts.ts";
import {
  OUTCOMES,
  perOutcome,
  type AdmissionView,
  type DashboardSnapshot,
  type DiscoveryView,
  type HealthState,
  type RouteRow,
  type WorkerRow,
  type ModelView,
  type WorkerView,
} from "./snapshot.ts";
import { RATE_WINDOW_S, WorkerStats } from "./worker-stats.ts";

/** 15 minutes of one-second points. */
export const SERIES_POINTS = 900;
export const FAILURES_KEPT = 50;

/** The server's live state, read once a second (never per request). */
export interface DashboardSource {
  readonly version: string;
  readonly pid: number;
  inFlight(): number;
  draining(): boolean;
  admission(): AdmissionView;
  workers(): readonly WorkerView[];
  /** The served models (several behind one proxy), when the server knows them. */
  models?(): readonly ModelView[];
  discovery(): DiscoveryView;
  /**
   * Whether the page is behind client keys (--protect-metrics with keys set), read at each
   * snapshot: only then may it show what clients were told; else the proxy's own words.
   */
  protectedByKeys(): boolean;
}

interface Health {
  at: number;
  ok: boolean;
  ready: boolean;
  ejectedAt: number | undefined;
  /** It answered that it is still loading its model. */
  starting: boolean;
}

interface RouteOutcome {
  readonly route: string;
  readonly outcome: Outcome;
  total: number;
  readonly recent: SlotCounts;
}

/**
 * The dashboard's data: fed per request by the same events as the Prometheus counters
 * (TrafficObserver), per health check by the monitor, and once a second by `tick`, which turns
 * the second's counts into a chart point. Every structure is bounded: 900 points, 50 failures,
 * one WorkerStats per worker in the pool, one counter per route and outcome.
 */
export class DashboardRecorder implements TrafficObserver {
  readonly startedAt: number;
  readonly #source: DashboardSource;
  readonly #now: () => number;
  readonly #series = new SeriesRing(SERIES_POINTS);
  readonly #failures = new FailureLog(FAILURES_KEPT);
  readonly #workers: Record<Role, Map<string, WorkerStats>> = { context: new Map(), generation: new Map() };
  readonly #health = new Map<string, Health>();
  readonly #routes = new Map<string, Map<Outcome, RouteOutcome>>();
  /** This second's outcomes and first-token latencies, emptied by each tick. */
  readonly #second = perOutcome(() => 0);
  readonly #secondTtft = new SlotHistograms(1, Number.MAX_SAFE_INTEGER);
  readonly #listeners = new Set<() => void>();
  #streamsOpen = 0;
  #keepalives = 0;
  #lastChangeAt: number | undefined;
  #timer: ReturnType<typeof setInterval> | undefined;

  constructor(source: DashboardSource, now: () => number = Date.now) {
    this.#source = source;
    this.#now = now;
    this.startedAt = now();
  }

  // --- fed per request (O(1), no allocation on the success path) ---

  legAttempt(role: Role, origin: string): void {
    this.#statsOf(role, origin).attempt(this.#now());
  }

  legFailed(role: Role, origin: string | undefined): void {
    if (origin !== undefined) this.#statsOf(role, origin).failed(this.#now());
  }

  legCompleted(role: Role, origin: string | undefined, firstTokenSeconds: number, completeSeconds: number): void {
    if (origin !== undefined) this.#statsOf(role, origin).completed(this.#now(), firstTokenSeconds * 1000, completeSeconds * 1000);
  }

  keepaliveSent(): void {
    this.#keepalives++;
  }

  streamOpened(): void {
    this.#streamsOpen++;
  }

  streamClosed(): void {
    this.#streamsOpen--;
  }

  requestEnded(request: EndedRequest): void {
    const now = this.#now();
    const counter = this.#routeOutcome(request.route, request.outcome);
    counter.total++;
    counter.recent.add(now);
    this.#second[request.outcome]++;
    if (request.ttftMs !== undefined) this.#secondTtft.record(0, request.ttftMs);
    if (request.outcome !== "ok") this.#failures.add(now, request);
  }

  // --- fed by the health monitor and the worker list ---

  /** A health check of `origin` ended; `ready` is whether it is in rotation after it. */
  healthChecked(origin: string, ok: boolean, ready: boolean, starting = false): void {
    const at = this.#now();
    const before = this.#health.get(origin);
    const ejectedAt = ready ? undefined : before?.ready === true ? at : before?.ejectedAt;
    this.#health.set(origin, { at, ok, ready, ejectedAt, starting });
  }

  /** A worker joined or left the list (discovery, reload). */
  workersChanged(): void {
    this.#lastChangeAt = this.#now();
  }

  // --- once a second ---

  /** Closes this second: a chart point, and what left the pool forgotten. */
  tick(): void {
    const now = this.#now();
    const [ttftP50Ms, ttftP99Ms] = this.#secondTtft.quantiles(0, [0.5, 0.99]);
    this.#series.push({ at: now, outcomes: { ...this.#second }, inFlight: this.#source.inFlight(), ttftP50Ms, ttftP99Ms });
    for (const outcome of OUTCOMES) this.#second[outcome] = 0;
    this.#secondTtft.clear();
    this.#forgetDeparted();
    for (const listener of this.#listeners) listener();
  }

  /** Runs `listener` after every tick; returns its removal. */
  onTick(listener: () => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Ticks every second until stop() (the timer does not keep the process alive). */
  start(): void {
    this.#timer ??= setInterval(() => this.tick(), 1000);
    this.#timer.unref();
  }

  stop(): void {
    clearInterval(this.#timer);
    this.#timer = undefined;
    this.#listeners.clear();
  }

  /** Everything the page shows; `seriesAfter` leaves out the chart points the page already has. */
  snapshot(seriesAfter?: number): DashboardSnapshot {
    const now = this.#now();
    const source = this.#source;
    return {
      now,
      proxy: {
        version: source.version,
        pid: source.pid,
        startedAt: this.startedAt,
        draining: source.draining(),
        inFlight: source.inFlight(),
        streamsOpen: this.#streamsOpen,
        keepalivesSent: this.#keepalives,
        admission: source.admission(),
        discovery: { ...source.discovery(), lastChangeAt: this.#lastChangeAt },
        requests: this.#routeRows(now),
      },
      workers: source.workers().map((worker) => this.#workerRow(worker, now)),
      models: source.models?.() ?? [],
      series: this.#series.columns(seriesAfter),
      failures: this.#failures.newestFirst(source.protectedByKeys()),
    };
  }

  #statsOf(role: Role, origin: string): WorkerStats {
    const byOrigin = this.#workers[role];
    let stats = byOrigin.get(origin);
    if (stats === undefined) {
      stats = new WorkerStats();
      byOrigin.set(origin, stats);
    }
    return stats;
  }

  #routeOutcome(route: string, outcome: Outcome): RouteOutcome {
    let byOutcome = this.#routes.get(route);
    if (byOutcome === undefined) {
      byOutcome = new Map();
      this.#routes.set(route, byOutcome);
    }
    let counter = byOutcome.get(outcome);
    if (counter === undefined) {
      counter = { route, outcome, total: 0, recent: new SlotCounts(RATE_WINDOW_S + 1, 1000) };
      byOutcome.set(outcome, counter);
    }
    return counter;
  }

  #routeRows(now: number): RouteRow[] {
    const rows: RouteRow[] = [];
    for (const byOutcome of this.#routes.values()) {
      for (const { route, outcome, total, recent } of byOutcome.values()) {
        rows.push({ route, outcome, total, perSecond: recent.sum(now - 1000, RATE_WINDOW_S) / RATE_WINDOW_S });
      }
    }
    return rows.toSorted((a, b) => a.route.localeCompare(b.route) || OUTCOMES.indexOf(a.outcome) - OUTCOMES.indexOf(b.outcome));
  }

  #workerRow(worker: WorkerView, now: number): WorkerRow {
    const health = this.#health.get(worker.url);
    const figures = this.#workers[worker.role].get(worker.url)?.figures(now);
    return {
      role: worker.role,
      url: worker.url,
      id: worker.id,
      version: worker.version,
      state: worker.ejectedFor === undefined ? stateOf(worker.ready, health) : "ejected",
      lastCheckAt: health?.at,
      inFlight: worker.inFlight,
      perSecond: figures?.perSecond ?? 0,
      errorShare: figures?.errorShare,
      ttftP50Ms: figures?.ttftP50Ms,
      ttftP99Ms: figures?.ttftP99Ms,
      durationP50Ms: figures?.durationP50Ms,
      durationP99Ms: figures?.durationP99Ms,
      ejectedAt: worker.ready ? undefined : health?.ejectedAt,
    };
  }

  /** Workers no longer listed take their figures with them, so memory follows the pool, not the uptime. */
  #forgetDeparted(): void {
    const listed = this.#source.workers();
    for (const role of ["context", "generation"] as const) {
      const byOrigin = this.#workers[role];
      for (const origin of byOrigin.keys()) {
        if (!listed.some((worker) => worker.role === role && worker.url === origin)) byOrigin.delete(origin);
      }
    }
    for (const origin of this.#health.keys()) {
      if (!listed.some((worker) => worker.url === origin)) this.#health.delete(origin);
    }
  }
}

function stateOf(ready: boolean, health: Health | undefined): HealthState {
  if (health === undefined) return ready ? "healthy" : "unchecked";
  if (health.starting) return "starting";
  if (ready) return health.ok ? "healthy" : "failing";
  return health.ok ? "joining" : "unhealthy";
}
