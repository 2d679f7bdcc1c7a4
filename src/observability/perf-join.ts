/**
 * GET /perf_metrics as trtllm-serve's G1/G2 proxy answers it (reference §5.2): each completed
 * request is remembered (at most `maxRequests`); each call polls every worker's own
 * /perf_metrics (which hands its records over once), files them by ctx_request_id, and returns
 * and forgets every request whose generation record arrived. Calls run one at a time.
 */

import { isJsonObject, readInteger, type JsonObject, type JsonValue } from "../json/json.ts";
import { serverName } from "./request-perf.ts";

export interface FinishedRequest {
  readonly contextOrigin: string | undefined;
  readonly generationOrigin: string;
  readonly ctxRequestId: bigint;
  readonly arrivalTime: number;
  readonly firstTokenTime: number | undefined;
}

export interface PerfJoinSource {
  /** Every worker origin to poll (a URL in both lists once). */
  readonly origins: () => readonly string[];
  /** The worker's GET /perf_metrics list; [] when it cannot be read. */
  readonly fetchRecords: (origin: string) => Promise<readonly JsonValue[]>;
}

export class PerfMetricsJoin {
  readonly #maxRequests: number;
  readonly #source: PerfJoinSource;
  #pending: FinishedRequest[] = [];
  /** origin → ctx_request_id → the worker's record. */
  readonly #byServer = new Map<string, Map<string, JsonObject>>();
  #collecting: Promise<unknown> = Promise.resolve();

  constructor(maxRequests: number, source: PerfJoinSource) {
    this.#maxRequests = maxRequests;
    this.#source = source;
  }

  /** A completed request; the oldest is forgotten when `maxRequests` wait already. */
  add(request: FinishedRequest): void {
    this.#pending.push(request);
    if (this.#pending.length > this.#maxRequests) this.#pending.splice(0, this.#pending.length - this.#maxRequests);
  }

  collect(): Promise<JsonObject[]> {
    const run = this.#collecting.then(() => this.#collectNow());
    this.#collecting = run.catch(() => undefined);
    return run;
  }

  async #collectNow(): Promise<JsonObject[]> {
    const origins = this.#source.origins();
    const lists = await Promise.all(origins.map((origin) => this.#source.fetchRecords(origin)));
    origins.forEach((origin, index) => this.#file(origin, lists[index] ?? []));
    const done: JsonObject[] = [];
    const remaining: FinishedRequest[] = [];
    for (const request of this.#pending) {
      const key = request.ctxRequestId.toString();
      const gen = this.#take(request.generationOrigin, key);
      if (gen === undefined) {
        remaining.push(request);
        continue;
      }
      const ctx = request.contextOrigin === undefined ? undefined : this.#take(request.contextOrigin, key);
      done.push({
        ctx_server: request.contextOrigin === undefined ? "" : serverName(request.contextOrigin),
        gen_server: serverName(request.generationOrigin),
        disagg_server_arrival_time: request.arrivalTime,
        disagg_server_first_token_time: request.firstTokenTime ?? null,
        ctx_perf_metrics: ctx ?? null,
        gen_perf_metrics: gen,
      });
    }
    this.#pending = remaining;
    return done;
  }

  /** Keeps at most `maxRequests` records per worker: the rest of a list is dropped, as upstream does. */
  #file(origin: string, records: readonly JsonValue[]): void {
    const filed = this.#byServer.get(origin) ?? new Map<string, JsonObject>();
    this.#byServer.set(origin, filed);
    const room = Math.max(0, this.#maxRequests - filed.size);
    for (const record of records.slice(0, room)) {
      const id = isJsonObject(record) ? readInteger(record["ctx_request_id"]) : undefined;
      if (id !== undefined && isJsonObject(record)) filed.set(id.toString(), record);
    }
  }

  #take(origin: string, key: string): JsonObject | undefined {
    const filed = this.#byServer.get(origin);
    const record = filed?.get(key);
    filed?.delete(key);
    return record;
  }
}
