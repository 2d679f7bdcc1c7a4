/**
 * Every request a worker saw, in arrival order, with its status kept current for waitFor.
 * With maxRecords, only the newest records are kept (a long benchmark run must not grow).
 */

import type { RecordedRequest } from "../types.ts";

/** What a new record is made from: the request as it arrived. */
export type RecordInit = Pick<RecordedRequest, "method" | "path" | "headers" | "body" | "phase" | "disaggRequestId">;

interface Waiter {
  readonly predicate: (record: RecordedRequest) => boolean;
  readonly resolve: (record: RecordedRequest) => void;
  readonly reject: (error: Error) => void;
  readonly timer: ReturnType<typeof setTimeout>;
}

const DEFAULT_WAIT_MS = 5000;

export class RequestLog {
  readonly records: RecordedRequest[] = [];
  readonly #waiters = new Set<Waiter>();
  readonly #maxRecords: number;
  #runningModelRequests = 0;
  #peakModelRequests = 0;
  #nextSeq = 0;

  constructor(maxRecords = Number.POSITIVE_INFINITY) {
    this.#maxRecords = maxRecords;
  }

  add(init: RecordInit): RecordedRequest {
    const record: RecordedRequest = { seq: this.#nextSeq++, ...init, status: "running", sent: [] };
    this.records.push(record);
    // Dropped in batches (once twice the cap is reached), so the trimming is O(1) per record.
    if (this.records.length > Math.max(1, 2 * this.#maxRecords)) this.records.splice(0, this.records.length - this.#maxRecords);
    if (record.phase !== "other") {
      this.#runningModelRequests++;
      this.#peakModelRequests = Math.max(this.#peakModelRequests, this.#runningModelRequests);
    }
    this.#offer(record);
    return record;
  }

  /** Moves a running record to its final status; later calls for the same record are ignored. */
  settle(record: RecordedRequest, status: "finished" | "aborted"): void {
    if (record.status !== "running") return;
    record.status = status;
    if (record.phase !== "other") this.#runningModelRequests--;
    this.#offer(record);
  }

  running(): number {
    return this.#runningModelRequests;
  }

  /** The most model requests that ran at once (a per-worker limit's check). */
  peakRunning(): number {
    return this.#peakModelRequests;
  }

  waitFor(predicate: (record: RecordedRequest) => boolean, timeoutMs = DEFAULT_WAIT_MS): Promise<RecordedRequest> {
    const found = this.records.find(predicate);
    if (found !== undefined) return Promise.resolve(found);
    return new Promise((resolve, reject) => {
      const waiter: Waiter = {
        predicate,
        resolve,
        reject,
        timer: setTimeout(() => {
          this.#waiters.delete(waiter);
          reject(new Error(`No recorded request matched within ${timeoutMs} ms`));
        }, timeoutMs),
      };
      this.#waiters.add(waiter);
    });
  }

  /** Rejects every pending waitFor: nothing new will be recorded. */
  close(): void {
    for (const waiter of this.#waiters) {
      clearTimeout(waiter.timer);
      waiter.reject(new Error("The emulated worker stopped before a recorded request matched"));
    }
    this.#waiters.clear();
  }

  /** A record is new or changed status: it may now match a waiter that nothing matched before. */
  #offer(record: RecordedRequest): void {
    for (const waiter of this.#waiters) {
      if (!waiter.predicate(record)) continue;
      clearTimeout(waiter.timer);
      this.#waiters.delete(waiter);
      waiter.resolve(record);
    }
  }
}
