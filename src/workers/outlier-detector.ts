import type { Role } from "../config/types.ts";
import type { ProxyError } from "../errors.ts";
import type { Logger } from "../observability/logger.ts";
import type { OutlierState, WorkerEntry, WorkerPool } from "./worker-pool.ts";

/**
 * Passive outlier ejection, as Envoy's outlier detection: a worker whose requests fail
 * `outlierFailures` times in a row (timeouts, lost connections, 5xx, broken answers) leaves
 * rotation for `outlierEjectionMs` × the number of times it was ejected (each such length it
 * then stays in rotation forgives one), and comes back once that time is over and a request to
 * it or a health check succeeds. Active /health checks cannot see a worker that
 * answers them while every request hangs (TensorRT-LLM #13713: "workers up, /health 200, every
 * post-burst request times out"); its requests can.
 *
 * Never more than `outlierMaxEjectionPercent` of a role's workers are ejected at once (at least
 * one may be), and never a role's last worker in rotation.
 */

export interface OutlierSettings {
  /** Consecutive failed attempts that eject a worker; 0 turns ejection off. @default 0 (`--outlier-failures` defaults to 5) */
  readonly outlierFailures?: number;
  /** The first ejection's length; each later one is this times the number of ejections. @default 30000 */
  readonly outlierEjectionMs?: number;
  /** The most of a role's workers ejected at once (at least one). @default 50 */
  readonly outlierMaxEjectionPercent?: number;
}

export class OutlierDetector {
  readonly #pool: WorkerPool;
  readonly #settings: Required<OutlierSettings>;
  readonly #logger: Logger;
  readonly #now: () => number;

  constructor(pool: WorkerPool, settings: OutlierSettings, logger: Logger, now: () => number = () => performance.now()) {
    this.#pool = pool;
    this.#settings = {
      outlierFailures: settings.outlierFailures ?? 0,
      outlierEjectionMs: settings.outlierEjectionMs ?? 30_000,
      outlierMaxEjectionPercent: settings.outlierMaxEjectionPercent ?? 50,
    };
    this.#logger = logger;
    this.#now = now;
  }

  /** An attempt on the worker ended: `failure` says why it counts as one, undefined a success. */
  observed(role: Role, origin: string, failure: string | undefined): void {
    if (this.#settings.outlierFailures <= 0) return;
    const entry = this.#pool.all(role).find((worker) => worker.origin === origin);
    if (entry === undefined) return;
    const state = (entry.outlier ??= { failures: 0, ejections: 0, ejected: undefined });
    if (failure === undefined) {
      state.failures = 0;
      this.#restoreIfDue(entry, "a request succeeded");
      return;
    }
    state.failures++;
    if (state.ejected === undefined && state.failures >= this.#settings.outlierFailures) this.#eject(entry, state, failure);
  }

  /** An attempt on the worker ended: a success (no error), a failure that counts (outlierFailureOf), or one that says nothing. */
  attemptEnded(role: Role, origin: string, error: ProxyError | undefined): void {
    if (error === undefined) return this.observed(role, origin, undefined);
    const failure = outlierFailureOf(error);
    if (failure !== undefined) this.observed(role, origin, failure);
  }

  /**
   * A health check of the origin ended: a passing one brings its ejected entries back once their
   * time is over, or at once when no other worker of the role is in rotation any more (the others
   * failed their checks since): never the last worker, whichever way the others left.
   */
  checked(origin: string, ok: boolean): void {
    if (!ok) return;
    for (const entry of this.#pool.entriesOf(origin)) {
      if (entry.outlier?.ejected !== undefined && this.#pool.ready(entry.role).length === 0)
        this.#restore(entry, "a health check passed and no other worker of its role is in rotation");
      else this.#restoreIfDue(entry, "a health check passed");
    }
  }

  #eject(entry: WorkerEntry, state: OutlierState, reason: string): void {
    const role = this.#pool.all(entry.role);
    const ejected = role.filter((worker) => worker.outlier?.ejected !== undefined).length;
    const allowed = Math.max(1, Math.floor((role.length * this.#settings.outlierMaxEjectionPercent) / 100));
    const serving = this.#pool.ready(entry.role).filter((worker) => worker !== entry).length;
    if (ejected >= allowed || serving === 0) {
      this.#logger.debug("worker not ejected: its role keeps it", {
        worker: entry.origin,
        role: entry.role,
        reason,
        ejected,
        allowed,
        serving,
      });
      return;
    }
    // As Envoy's multiplier: each ejection length spent back in rotation forgives one ejection.
    const now = this.#now();
    if (state.backSince !== undefined)
      state.ejections = Math.max(0, state.ejections - Math.floor((now - state.backSince) / this.#settings.outlierEjectionMs));
    state.ejections++;
    const ms = this.#settings.outlierEjectionMs * state.ejections;
    state.ejected = { until: now + ms, reason };
    this.#logger.warn("worker ejected: its requests keep failing", {
      worker: entry.origin,
      role: entry.role,
      reason,
      consecutive_failures: state.failures,
      ejection_s: ms / 1000,
      ejections: state.ejections,
    });
    state.failures = 0;
  }

  #restoreIfDue(entry: WorkerEntry, why: string): void {
    const ejected = entry.outlier?.ejected;
    if (ejected === undefined || this.#now() < ejected.until) return;
    this.#restore(entry, why);
  }

  #restore(entry: WorkerEntry, why: string): void {
    if (entry.outlier === undefined) return;
    entry.outlier.ejected = undefined;
    entry.outlier.backSince = this.#now();
    this.#logger.info("worker back in rotation after its ejection", {
      worker: entry.origin,
      role: entry.role,
      because: why,
      ejections: entry.outlier.ejections,
    });
  }
}

/**
 * What a failed attempt says of its worker: a failure to count toward its ejection, or
 * undefined for no verdict (the client left, the proxy drained, the worker refused a bad or excess request and
 * so is alive, or a reused connection was lost unread).
 */
export function outlierFailureOf(error: ProxyError): string | undefined {
  switch (error.code) {
    case "WORKER_TIMEOUT":
      return "timeout";
    case "WORKER_UNREACHABLE":
      return error.unread ? undefined : error.neverSent ? "connection refused" : "connection lost";
    case "WORKER_HTTP_ERROR":
      // 503 and 529 say "overloaded, try later" (a worker alive and answering), not "broken".
      return error.status >= 500 && error.status !== 503 && error.status !== 529 ? `http ${error.status}` : undefined;
    case "WORKER_BAD_ANSWER":
      return "bad answer";
    case "WORKER_STREAM_BROKEN":
      return "stream broken";
    default:
      return undefined;
  }
}
