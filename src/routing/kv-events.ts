/**
 * Workers' KV cache events: `POST <worker>/kv_cache_events` answers the events since the last
 * call (trtllm-serve drains its buffer), each `{event_id, data: {type, …}, window_size}` or the
 * bare data. One poller serves every router, so a worker listed in both roles is drained once
 * and both roles' routers learn from it. Polls never block placement: at most one runs per
 * worker (further requests are coalesced into one follow-up poll) and `maxConcurrent` at once.
 */

import { isJsonObject, type JsonValue } from "../json/json.ts";
import { readJsonAnswer } from "../workers/answers.ts";
import { readBlockHash } from "./block-hash.ts";

/**
 * One poll's answer is read as a model answer is (size, then shape, then parse); a worker
 * drains its buffer (4,096 events by default, ~100 bytes each) on every poll, so 16 MiB is far above it.
 */
const KV_EVENTS_ANSWER_BYTES = 16 * 1024 * 1024;

/** The only hash algorithm the router computes; events in another are ignored. */
export const HASH_ALGO = "v1_block_key";

export type KvEvent =
  /** The worker's cache was (re)created: it holds nothing. */
  | { readonly type: "created" }
  | { readonly type: "stored"; readonly hashes: readonly bigint[] }
  | { readonly type: "removed"; readonly hashes: readonly bigint[] };

/** Reads an answer of /kv_cache_events; what it does not understand is skipped. */
export function readKvEvents(answer: JsonValue): KvEvent[] {
  if (!Array.isArray(answer)) return [];
  const events: KvEvent[] = [];
  for (const raw of answer) {
    if (!isJsonObject(raw)) continue;
    const data = isJsonObject(raw["data"]) ? raw["data"] : raw;
    const algo = raw["hash_algo"] ?? data["hash_algo"] ?? HASH_ALGO;
    const type = data["type"];
    if (type === "created") events.push({ type });
    else if (algo !== HASH_ALGO) continue;
    else if (type === "stored" && Array.isArray(data["blocks"])) {
      events.push({ type, hashes: hashesOf(data["blocks"].map((block) => (isJsonObject(block) ? block["block_hash"] : undefined))) });
    } else if (type === "removed" && Array.isArray(data["block_hashes"])) {
      events.push({ type, hashes: hashesOf(data["block_hashes"]) });
    }
  }
  return events;
}

function hashesOf(values: readonly (JsonValue | undefined)[]): bigint[] {
  return values.map(readBlockHash).filter((hash) => hash !== undefined);
}

/** fetch as calls to workers make it (the worker CA and API key applied). */
export type EventsFetch = (url: string, init?: RequestInit) => Promise<Response>;
export type KvEventListener = (origin: string, events: readonly KvEvent[]) => void;
export type RoutingWarning = (message: string, fields: Record<string, unknown>) => void;

export interface KvEventPollerOptions {
  readonly fetch?: EventsFetch | undefined;
  readonly maxConcurrent?: number | undefined;
  readonly timeoutMs?: number | undefined;
  /** A worker's polls started failing (reported once until one succeeds again). */
  readonly onWarning?: RoutingWarning | undefined;
}

interface OriginPolls {
  running: boolean;
  queued: boolean;
  /** Settled when the queued or running poll ends. */
  covered: (() => void)[];
  /** Requests made while a poll ran: they need the next one. */
  next: (() => void)[];
}

export class KvEventPoller {
  readonly #fetch: EventsFetch;
  readonly #maxConcurrent: number;
  readonly #timeoutMs: number;
  readonly #onWarning: RoutingWarning | undefined;
  readonly #listeners: KvEventListener[] = [];
  readonly #polls = new Map<string, OriginPolls>();
  readonly #waiting: string[] = [];
  readonly #failing = new Set<string>();
  #running = 0;

  constructor(options: KvEventPollerOptions = {}) {
    this.#fetch = options.fetch ?? ((url, init) => fetch(url, init));
    this.#maxConcurrent = Math.max(options.maxConcurrent ?? 4, 1);
    this.#timeoutMs = options.timeoutMs ?? 5000;
    this.#onWarning = options.onWarning;
  }

  listen(listener: KvEventListener): void {
    this.#listeners.push(listener);
  }

  /** Asks for the worker's events; settles (never rejects) once a poll begun after this call ended. */
  poll(origin: string): Promise<void> {
    const state = this.#polls.get(origin) ?? { running: false, queued: false, covered: [], next: [] };
    this.#polls.set(origin, state);
    return new Promise((resolve) => {
      // A running poll may have read the worker before this request's blocks were stored.
      if (state.running) state.next.push(resolve);
      else state.covered.push(resolve);
      if (!state.running && !state.queued) this.#enqueue(origin, state);
    });
  }

  #enqueue(origin: string, state: OriginPolls): void {
    state.queued = true;
    this.#waiting.push(origin);
    this.#pump();
  }

  #pump(): void {
    while (this.#running < this.#maxConcurrent) {
      const origin = this.#waiting.shift();
      const state = origin === undefined ? undefined : this.#polls.get(origin);
      if (origin === undefined || state === undefined) return;
      state.queued = false;
      state.running = true;
      this.#running++;
      void this.#run(origin, state);
    }
  }

  async #run(origin: string, state: OriginPolls): Promise<void> {
    try {
      const events = await this.#fetchEvents(origin);
      this.#failing.delete(origin);
      for (const listener of this.#listeners) listener(origin, events);
    } catch (error) {
      if (!this.#failing.has(origin)) {
        this.#failing.add(origin);
        this.#onWarning?.("Cannot read the worker's KV cache events", {
          worker: origin,
          error: error instanceof Error ? error.message : String(error),
        });
      }
    } finally {
      this.#running--;
      state.running = false;
      for (const settle of state.covered) settle();
      state.covered = state.next;
      state.next = [];
      if (state.covered.length > 0) this.#enqueue(origin, state);
      else this.#polls.delete(origin);
      this.#pump();
    }
  }

  async #fetchEvents(origin: string): Promise<KvEvent[]> {
    const response = await this.#fetch(`${origin}/kv_cache_events`, { method: "POST", signal: AbortSignal.timeout(this.#timeoutMs) });
    if (!response.ok) {
      await response.body?.cancel();
      throw new Error(`HTTP ${response.status}`);
    }
    return readKvEvents(await readJsonAnswer(response, KV_EVENTS_ANSWER_BYTES));
  }
}
