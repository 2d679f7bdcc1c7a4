/**
 * What the dashboard page reads: one JSON object per second (GET /dashboard/data, and each
 * event of GET /dashboard/events). Times are epoch milliseconds; latencies milliseconds.
 */

import type { Role } from "../config/types.ts";
import type { Outcome } from "../errors.ts";
import type { WorkerFigures } from "./worker-stats.ts";

export const OUTCOMES: readonly Outcome[] = ["ok", "worker_error", "client_disconnected", "timeout", "rejected", "internal_error"];

/** A worker as the server sees it right now. */
export interface WorkerView {
  readonly role: Role;
  readonly url: string;
  /** The id it registered under, when discovered. */
  readonly id: string | undefined;
  readonly ready: boolean;
  readonly inFlight: number;
  /** The version the worker reported, when known. */
  readonly version: string | undefined;
  /** Why its requests got it ejected, while it is (outlier-detector.ts). */
  readonly ejectedFor?: string | undefined;
}

/** Where the worker list comes from and, for etcd, how that is going. */
export interface DiscoveryView {
  /** "static" (flags or YAML lists), "etcd cluster" (disagg_cluster) or "etcd metadata" (metadata_config). */
  readonly source: string;
  readonly endpoint?: string;
  readonly connected?: boolean;
  readonly revision?: string | undefined;
  readonly lastError?: string | undefined;
  /** When a worker last joined or left the list (discovery or reload). */
  readonly lastChangeAt?: number | undefined;
}

export interface AdmissionView {
  readonly inFlight: number;
  readonly waiting: number;
  /** 0 = no limit. */
  readonly limit: number;
}

/**
 * "healthy": in rotation, last check passed; "failing": in rotation, last check failed; "unhealthy": out of rotation after failed checks;
 * "joining": passing checks, not yet in rotation; "starting": it answered that it is still loading its model (x-trtllm-server-state); "unchecked": no check yet;
 * "ejected": out of rotation because its requests kept failing, whatever its checks say.
 */
export type HealthState = "healthy" | "failing" | "unhealthy" | "joining" | "starting" | "unchecked" | "ejected";

/** A worker's row: what the server knows of it now, and its figures over the last minute. */
export interface WorkerRow extends WorkerFigures {
  readonly role: Role;
  readonly url: string;
  readonly id: string | undefined;
  readonly version: string | undefined;
  readonly state: HealthState;
  readonly lastCheckAt: number | undefined;
  readonly inFlight: number;
  /** When it left rotation, while it is out. */
  readonly ejectedAt: number | undefined;
}

export interface RouteRow {
  readonly route: string;
  readonly outcome: Outcome;
  /** Since start: equals disagg_proxy_requests_total{route,outcome}. */
  readonly total: number;
  /** Over the last 10 s. */
  readonly perSecond: number;
}

export interface ProxyView {
  readonly version: string;
  /** The process serving the page: after an upgrade (a take-over) the pid and start time change. */
  readonly pid: number;
  readonly startedAt: number;
  readonly draining: boolean;
  readonly inFlight: number;
  readonly streamsOpen: number;
  readonly keepalivesSent: number;
  readonly admission: AdmissionView;
  readonly discovery: DiscoveryView;
  readonly requests: readonly RouteRow[];
}

/** One point per second, oldest first; columns share their index. ttft is null in a second without a first token. */
export interface Series {
  readonly at: readonly number[];
  readonly outcomes: Readonly<Record<Outcome, readonly number[]>>;
  readonly inFlight: readonly number[];
  readonly ttftP50Ms: readonly (number | null)[];
  readonly ttftP99Ms: readonly (number | null)[];
}

export interface FailureRow {
  readonly at: number;
  readonly route: string;
  /** Decimal; absent when the request was refused before it got an id. */
  readonly disaggRequestId: string | undefined;
  readonly worker: string | undefined;
  readonly outcome: Outcome;
  readonly status: number;
  readonly message: string | undefined;
}

/** A served model (from its workers' GET /v1/models): its workers of each role, how many ready, its requests in flight. */
export interface ModelView {
  readonly model: string;
  readonly contextReady: number;
  readonly contextWorkers: number;
  readonly generationReady: number;
  readonly generationWorkers: number;
  readonly inFlight: number;
}

export interface DashboardSnapshot {
  readonly now: number;
  readonly proxy: ProxyView;
  readonly workers: readonly WorkerRow[];
  /** Each served model's readiness and load; empty while no worker named its model. */
  readonly models: readonly ModelView[];
  readonly series: Series;
  /** Newest first, at most 50. */
  readonly failures: readonly FailureRow[];
}

/** One value per outcome. */
export function perOutcome<T>(make: (outcome: Outcome) => T): Record<Outcome, T> {
  return {
    ok: make("ok"),
    worker_error: make("worker_error"),
    client_disconnected: make("client_disconnected"),
    timeout: make("timeout"),
    rejected: make("rejected"),
    internal_error: make("internal_error"),
  };
}
