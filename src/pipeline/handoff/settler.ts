import type { JsonObject } from "../../json/json.ts";
import type { JsonSource } from "../../json/json-source.ts";
import { asProxyError, ProxyError } from "../../errors.ts";
import { disaggAuthOf } from "../../security/disagg-auth.ts";
import type { RoutingRequest } from "../../routing/routing-request.ts";
import { delay } from "../../timers.ts";
import { JSON_CODEC } from "../../workers/body-codec.ts";
import { postForJson } from "../../workers/client.ts";
import { isWorkerStream } from "../../workers/stream-call.ts";
import type { ByteReader } from "../../bytes.ts";
import { neverReachedEngine, provesKvPulled } from "../retry.ts";
import { WORKER_PATH, type ApiKind } from "../api-kind.ts";
import type { ProxyConfig, Role } from "../../config/types.ts";
import type { Logger } from "../../observability/logger.ts";
import { placeSettle } from "../../routing/coordinated-placement.ts";
import type { Placed, Placement } from "../../routing/placement.ts";
import type { DisaggIdAllocator } from "../../request/disagg-id.ts";
import type { BodyCodec } from "../../workers/body-codec.ts";
import type { WorkerFetch } from "../../workers/transport.ts";

/**
 * What settling reads of the configuration: each settle and each followed attempt is bounded by
 * requestTimeoutMs (default 180000), a claim's answer by maxAnswerBytes (64 MiB), and signed with
 * internalAuthKey when one is set (default none).
 */
export type SettlerSettings = Pick<ProxyConfig, "requestTimeoutMs" | "maxAnswerBytes" | "internalAuthKey">;

/** What settling needs of the server. */
export interface SettlerDeps {
  readonly settings: SettlerSettings;
  readonly placement: Placement;
  /** A settle's placement key: its own id, never the request's (a restarted request's legs may still hold that one). */
  readonly ids: DisaggIdAllocator;
  readonly logger: Logger;
  readonly workerFetch: WorkerFetch;
  readonly bodyCodec?: BodyCodec | undefined;
}

/**
 * Settling a context-first hand-off the proxy gave up on: a context worker holds a finished
 * hand-off's KV until a generation_only request pulls it (emulator/kv/held-kv.ts cites upstream),
 * so the proxy claims it with that body capped at one token, or lets an attempt in flight run
 * until it proves its claim. Why, and the bounds (SETTLE_CONCURRENCY at once, SETTLE_QUEUE
 * waiting, each within the request timeout): docs/failure-semantics.md, "Hand-off settling".
 */
const SETTLE_CONCURRENCY = 8;
const SETTLE_QUEUE = 1024;
/** Between placements while no generation worker can take the settle. */
const PLACE_AGAIN_MS = 100;
/**
 * The longest wait between two settles turned away (refused, 429, 503): the waits double from
 * PLACE_AGAIN_MS. A settle is tried until the request timeout, not a fixed number of times: an
 * overload that outlasts a few tries would otherwise leave every hand-off of its requests held
 * for good (no kv_transfer_timeout_ms by default), so the overload would end with full KV caches.
 */
const TURNED_AWAY_WAIT_MAX_MS = 2000;

/** Why a hand-off was settled (the metric's `reason` label). */
export type SettleReason = "client_gone" | "no_generation_worker" | "draining" | "generation_unsent" | "generation_failed";

/** A hand-off no generation request carried, and what claiming it needs. */
export interface UnclaimedHandoff {
  readonly api: ApiKind;
  /** The generation_only body the request would have sent. */
  readonly body: JsonObject;
  readonly source: JsonSource | undefined;
  readonly routing: RoutingRequest;
  readonly disaggRequestId: bigint;
  readonly contextWorker: string;
}

/** What an adopted attempt leaves to settle, once it answered or failed. */
export interface AdoptedOutcome {
  readonly reason: SettleReason;
  follow(value: unknown): Promise<UnclaimedHandoff | undefined>;
  onFailure(error: ProxyError): UnclaimedHandoff | undefined;
}

/** The worker an adopted attempt runs on, under which request key. */
export interface AdoptedWorker {
  readonly role: Role;
  readonly origin: string;
  readonly requestKey: bigint;
  /** Frees the request's admission slot (--max-inflight), kept while the attempt runs on. */
  readonly releaseAdmission?: (() => void) | undefined;
}

/** Hears each settle's end: `settled` true when the hand-off was claimed. */
export type SettleListener = (reason: SettleReason, settled: boolean) => void;

interface Settle {
  readonly handoff: UnclaimedHandoff;
  readonly reason: SettleReason;
  /** Generation workers not to claim it on (the one its generation leg failed on). */
  readonly avoid: readonly string[];
}

export class HandoffSettler {
  readonly #deps: SettlerDeps;
  readonly #onSettled: SettleListener;
  readonly #stopping = new AbortController();
  readonly #queue: Settle[] = [];
  #running = 0;
  #adopted = 0;

  constructor(deps: SettlerDeps, onSettled: SettleListener) {
    this.#deps = deps;
    this.#onSettled = onSettled;
  }

  /** Settles in flight or waiting, and adopted attempts still followed. */
  get pending(): number {
    return this.#running + this.#queue.length + this.#adopted;
  }

  /** Claims the hand-off with a one-token generation request, now or once a settle slot frees; not on a worker in `avoid` while another can take it. */
  settle(handoff: UnclaimedHandoff, reason: SettleReason, avoid: readonly string[] = []): void {
    if (this.#stopping.signal.aborted) return;
    if (this.#queue.length >= SETTLE_QUEUE) {
      this.#deps.logger.warn("hand-off not settled: too many waiting", {
        disagg_request_id: handoff.disaggRequestId,
        reason,
        waiting: this.#queue.length,
      });
      this.#onSettled(reason, false);
      return;
    }
    this.#queue.push({ handoff, reason, avoid });
    this.#next();
  }

  /**
   * An attempt that was in flight when its request ended runs on, bounded by the request
   * timeout, until `follow` has seen what it answered (and says which hand-off that leaves to
   * settle), or it failed (`onFailure` says the same); then `abort` stops it. Its worker stays
   * reserved until then: the request's end released the request's reservations, yet the worker
   * still serves the attempt (a non-streamed generation: to its last token), and placement,
   * --max-inflight-per-worker and the load shown must count it.
   */
  adopt(pending: Promise<unknown>, abort: (reason: unknown) => void, outcome: AdoptedOutcome, worker: AdoptedWorker): void {
    const reservation = this.#deps.placement.table.reserve(worker.requestKey, worker.role, worker.origin);
    void this.#follow(pending, abort, outcome).finally(() => {
      reservation.release();
      worker.releaseAdmission?.();
    });
  }

  /** A generation attempt claims its hand-off once it answers (a stream: its first bytes); one that never reached an engine leaves it to settle. */
  generationOutcome(handoff: UnclaimedHandoff, reason: SettleReason): AdoptedOutcome {
    return {
      reason,
      follow: async (value) => {
        if (isWorkerStream(value)) await firstBytes(value.reader);
        this.#deps.logger.info("hand-off settled by its generation attempt", {
          disagg_request_id: handoff.disaggRequestId,
          context_worker: handoff.contextWorker,
          reason,
        });
        this.#onSettled(reason, true);
        return undefined;
      },
      onFailure: (error) => (neverReachedEngine(error) ? handoff : undefined),
    };
  }

  async #follow(pending: Promise<unknown>, abort: (reason: unknown) => void, outcome: AdoptedOutcome): Promise<void> {
    const timer = setTimeout(() => abort(new DOMException("Timed out", "TimeoutError")), this.#deps.settings.requestTimeoutMs);
    this.#adopted++;
    let left: UnclaimedHandoff | undefined;
    try {
      left = await outcome.follow(await pending);
    } catch (thrown) {
      left = outcome.onFailure(asProxyError(thrown));
    } finally {
      clearTimeout(timer);
      abort(new DOMException("The request ended", "AbortError"));
    }
    if (left !== undefined) this.settle(left, outcome.reason);
    this.#adopted--;
  }

  /** The proxy stops: running settles are aborted, waiting ones dropped. */
  stop(): void {
    this.#stopping.abort();
    this.#queue.length = 0;
  }

  #next(): void {
    while (this.#running < SETTLE_CONCURRENCY) {
      const next = this.#queue.shift();
      if (next === undefined) return;
      this.#running++;
      void this.#run(next).finally(() => {
        this.#running--;
        this.#next();
      });
    }
  }

  async #run({ handoff, reason, avoid }: Settle): Promise<void> {
    const { deps } = { deps: this.#deps };
    const deadline = performance.now() + deps.settings.requestTimeoutMs;
    const fields = { disagg_request_id: handoff.disaggRequestId, context_worker: handoff.contextWorker, reason };
    let lastError: ProxyError | undefined;
    let turnedAwayWaitMs = PLACE_AGAIN_MS;
    const tried: string[] = [...avoid];
    while (!this.#stopping.signal.aborted && performance.now() < deadline) {
      try {
        const worker = await this.#claimOnce(handoff, deadline - performance.now(), tried);
        deps.logger.info("hand-off settled", { ...fields, generation_worker: worker });
        this.#onSettled(reason, true);
        return;
      } catch (thrown) {
        lastError = asProxyError(thrown);
        // Already pulled (a generation attempt that failed after its pull): expected, nothing held.
        if (provesKvPulled(lastError)) {
          deps.logger.info("hand-off was already claimed", { ...fields, error: lastError.message });
          this.#onSettled(reason, true);
          return;
        }
        // A worker that answered (an error included) pulled the KV or found none: nothing to retry.
        if (neverReachedEngine(lastError)) {
          await delay(Math.min(turnedAwayWaitMs, deadline - performance.now()), this.#stopping.signal);
          turnedAwayWaitMs = Math.min(turnedAwayWaitMs * 2, TURNED_AWAY_WAIT_MAX_MS);
          continue;
        }
        if (lastError.code !== "NO_WORKER" && lastError.code !== "OVERLOADED") break;
        await delay(PLACE_AGAIN_MS, this.#stopping.signal);
      }
    }
    deps.logger.warn("hand-off not settled", { ...fields, code: lastError?.code, error: lastError?.message });
    this.#onSettled(reason, false);
  }

  /**
   * The least loaded generation worker that can take the hand-off (not its context worker), one
   * not tried yet first (Placement.placeLeastLoaded: not the routers' pick; routing/coordinated-placement.ts placeSettle).
   */
  #place(handoff: UnclaimedHandoff, tried: readonly string[]): Placed | Promise<Placed> {
    // With a coordinator, it places the settle too: the worker's limit counts it across replicas.
    // A coordinator keys its reservation by role and req_id: under the request's id, the restarted request's generation leg would share it.
    return placeSettle(this.#deps.placement, {
      role: "generation",
      requestKey: this.#deps.ids.next(),
      exclude: handoff.contextWorker,
      avoid: tried,
      routing: handoff.routing,
      requires: handoff.api === "responses" ? "responses_disaggregation" : undefined,
    });
  }

  /** One claim: a generation worker placed (not the context worker), the capped request sent. */
  async #claimOnce(handoff: UnclaimedHandoff, remainingMs: number, tried: string[]): Promise<string> {
    const deps = this.#deps;
    const placed = await this.#place(handoff, tried);
    tried.push(placed.worker.origin);
    try {
      const codec = deps.bodyCodec ?? JSON_CODEC;
      const body = cappedBody(handoff.api, handoff.body);
      await postForJson({
        role: "generation",
        origin: placed.worker.origin,
        path: WORKER_PATH[handoff.api],
        body: codec.encode(body, handoff.source),
        signal: this.#stopping.signal,
        timeoutMs: Math.max(1, remainingMs),
        maxAnswerBytes: deps.settings.maxAnswerBytes,
        fetch: deps.workerFetch,
        headers: { ...codec.headers, ...disaggAuthOf(deps.settings.internalAuthKey, body) },
      });
      return placed.worker.origin;
    } finally {
      placed.reservation.release();
    }
  }
}

/** The generation body capped at one token, not streamed: the worker pulls the KV and stops. */
export function cappedBody(api: ApiKind, body: JsonObject): JsonObject {
  const capped: JsonObject = { ...body, stream: false };
  if (api === "responses") capped["max_output_tokens"] = 1;
  else {
    capped["max_tokens"] = 1;
    if (api === "chat" && capped["max_completion_tokens"] !== undefined) capped["max_completion_tokens"] = 1;
    capped["stream_options"] = null;
  }
  return capped;
}

/** Reads a stream until its first bytes (or its end), then lets it go. */
async function firstBytes(reader: ByteReader): Promise<void> {
  try {
    await reader.read();
  } catch {
    // The stream broke: nothing more to wait for.
  } finally {
    void reader.cancel().catch(() => {});
  }
}
