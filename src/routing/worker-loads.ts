/**
 * What each worker last reported of its own load, blended with the proxy's own in-flight
 * requests. Several proxy replicas in front of one fleet each count only their own requests;
 * a worker's report counts everyone's. Between two reports the proxy adds what it itself
 * placed or finished on the worker since the report:
 *
 *   load = max(own in flight now, reported running + waiting + (own now − own at the report))
 *
 * (own counts over both roles of the origin: the worker's report covers both). A report older
 * than `maxAgeMs` (dropped by `expire`, which the poller calls before each round, so a router's
 * read of every candidate's load costs no clock read), or none, leaves the proxy's own count.
 */

import type { Role } from "../config/types.ts";
import type { LoadReport } from "../workers/load-report.ts";
import type { ReservationTable } from "./reservations.ts";

interface Sample {
  readonly report: LoadReport;
  /** The proxy's own in-flight requests on the worker (both roles) when the report arrived. */
  readonly ownAtReport: number;
  readonly at: number;
}

/** A worker started or stopped reporting its load (for one log line per change). */
export type ReportingChange = (origin: string, reporting: boolean) => void;

export class WorkerLoads {
  readonly #samples = new Map<string, Sample>();
  /** Whether each polled worker reported at its last poll: a change is told once. */
  readonly #reporting = new Map<string, boolean>();
  readonly #table: ReservationTable;
  readonly #maxAgeMs: number;
  readonly #now: () => number;
  readonly #onChange: ReportingChange | undefined;

  constructor(table: ReservationTable, maxAgeMs: number, options: { now?: () => number; onChange?: ReportingChange | undefined } = {}) {
    this.#table = table;
    this.#maxAgeMs = maxAgeMs;
    this.#now = options.now ?? (() => performance.now());
    this.#onChange = options.onChange;
  }

  /** A poll's outcome: the worker's report, or undefined when it gave none (then its own counts stand). */
  record(origin: string, report: LoadReport | undefined): void {
    if (report === undefined) this.#samples.delete(origin);
    else this.#samples.set(origin, { report, ownAtReport: this.#own(origin), at: this.#now() });
    const reporting = report !== undefined;
    if (this.#reporting.get(origin) !== reporting) this.#onChange?.(origin, reporting);
    this.#reporting.set(origin, reporting);
  }

  /** Drops reports older than the bound. */
  expire(): void {
    const oldest = this.#now() - this.#maxAgeMs;
    for (const [origin, sample] of this.#samples) if (sample.at < oldest) this.#samples.delete(origin);
  }

  /** Drops what is known of workers no longer listed. */
  retain(origins: ReadonlySet<string>): void {
    for (const origin of this.#samples.keys()) if (!origins.has(origin)) this.#samples.delete(origin);
    for (const origin of this.#reporting.keys()) if (!origins.has(origin)) this.#reporting.delete(origin);
  }

  /** The load a router weighs for a worker of a role: the blend above, or the proxy's own count. */
  load(role: Role, origin: string): number {
    const own = this.#table.load(role, origin);
    const sample = this.#samples.get(origin);
    if (sample === undefined) return own;
    const { running, waiting } = sample.report;
    const other = this.#table.load(role === "context" ? "generation" : "context", origin);
    return Math.max(own, running + waiting + own + other - sample.ownAtReport);
  }

  /** Requests waiting in the worker's queue by its latest report; undefined without one. */
  waiting(origin: string): number | undefined {
    return this.#samples.get(origin)?.report.waiting;
  }

  /** The latest report, for /cluster_info. */
  report(origin: string): LoadReport | undefined {
    return this.#samples.get(origin)?.report;
  }

  #own(origin: string): number {
    return this.#table.load("context", origin) + this.#table.load("generation", origin);
  }
}
