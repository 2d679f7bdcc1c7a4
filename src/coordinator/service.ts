/**
 * The routing brain of `disagg-proxy coordinator`: upstream's DisaggCoordinatorService
 * (disagg_coordinator.py @ 0186c597 select/finish/cluster_info) over this proxy's own
 * Placement: the same routers, reservation table, --max-inflight-per-worker, --max-worker-queue
 * and KV-block index one proxy uses, each placement held as a lease until its /finish.
 */

import type { ProxyConfig, Role, RouterType } from "../config/types.ts";
import type { JsonObject, JsonValue } from "../json/json.ts";
import { ProxyError } from "../errors.ts";
import type { Logger } from "../observability/logger.ts";
import {
  serverNameOf,
  TOKEN_HASH_ALGO,
  type FinishRequest,
  type SelectRequest,
  type WireMap,
  type WireValue,
} from "../routing/coordinator-wire.ts";
import type { Placement, RoutedPlacement } from "../routing/placement.ts";
import type { RoutingRequest } from "../routing/routing-request.ts";
import { inRotation } from "../workers/worker-pool.ts";
import { LeaseTable, type Lease } from "./leases.ts";
import { coordinatorMetrics, type CoordinatorMetrics } from "./metrics.ts";
import { routingOf } from "./placement-key.ts";

export type CoordinatorSettings = Pick<ProxyConfig, "contextRouter" | "generationRouter" | "routerOptions" | "maxInflight"> & {
  /** A placement with no /finish is released after this long (upstream: 180 s). */
  readonly reservationTimeoutMs: number;
  /** Leases held at most (default MAX_LEASES). */
  readonly maxLeases?: number;
};

/** Far above any fleet's in-flight requests; a bound on the table whatever the callers send. */
export const MAX_LEASES = 1_000_000;

/** An answer: the status and the msgpack map it carries. */
export interface Answer {
  readonly status: number;
  readonly body: WireMap;
}

interface Held {
  readonly placed: RoutedPlacement;
  readonly routing: RoutingRequest | undefined;
}

/** Routers that keep state between requests: the ones upstream's serving processes delegate. */
const STATEFUL: ReadonlySet<RouterType> = new Set(["conversation", "kv_cache_aware"]);

export class CoordinatorService {
  readonly placement: Placement;
  readonly metrics: CoordinatorMetrics;
  readonly #settings: CoordinatorSettings;
  readonly #logger: Logger;
  readonly #leases: LeaseTable<Held>;
  /** What routers are still learning from finished legs (a worker's KV events being read). */
  readonly #learning = new Set<Promise<void>>();
  /** Keys of placements made without a req_id (released at once): below zero, never a disagg id. */
  #anonymous = 0n;

  constructor(placement: Placement, settings: CoordinatorSettings, logger: Logger) {
    this.placement = placement;
    this.#settings = settings;
    this.#logger = logger;
    const leaseSettings = { timeoutMs: settings.reservationTimeoutMs, maxLeases: settings.maxLeases ?? MAX_LEASES };
    this.#leases = new LeaseTable<Held>(leaseSettings, (lease) => this.#expired(lease));
    this.metrics = coordinatorMetrics(placement, () => this.#leases.size);
  }

  /** Placements held (one per role and req_id). */
  get leases(): number {
    return this.#leases.size;
  }

  /** POST /select: a worker for the leg, reserved until its /finish or the lease's end. */
  select(request: SelectRequest): Answer {
    const answer = this.#select(request);
    this.metrics.placed(request.role, answer.status);
    return answer;
  }

  #select(request: SelectRequest): Answer {
    const { role, reqId } = request;
    // A second select of the same leg first releases the first, as failed (upstream's re-select rule).
    const previous = reqId === undefined ? undefined : this.#leases.take(role, reqId);
    if (previous !== undefined) this.#release(previous, false);
    const routing = routingOf(request.routingKey);
    const firstLeg = reqId === undefined || !this.#leases.holds(reqId);
    try {
      if (firstLeg) this.#admit(routing);
      const requestKey = reqId ?? --this.#anonymous;
      const placed = this.placement.place({
        role,
        requestKey,
        exclude: originOf(request.excludeServer),
        avoid: [],
        ...(routing === undefined ? {} : { routing }),
      });
      // Without a req_id no /finish can name it: nothing is held (upstream would hold its load for good).
      if (reqId === undefined) placed.reservation.release();
      else this.#leases.hold({ role, reqId, held: { placed, routing } });
      const server = serverNameOf(placed.worker.origin);
      return { status: 200, body: { server, info: this.#infoOf(role, placed, routing), req_id: reqId ?? null } };
    } catch (error) {
      if (!(error instanceof ProxyError)) throw error;
      return { status: error.status, body: { error: error.message, code: error.code } };
    }
  }

  /** POST /finish: releases the leg's placement; an unknown one is a no-op, as upstream. */
  finish(request: FinishRequest): void {
    const lease = this.#leases.take(request.role, request.reqId);
    this.metrics.finished(request.role, request.success, lease !== undefined);
    if (lease !== undefined) this.#release(lease, request.success);
  }

  /** GET /health: enough workers of each role are ready. */
  ready(): boolean {
    return this.placement.pool.isReady();
  }

  /** GET /cluster_info: upstream's fields (is_ready, server_lists, routing_key_configs), then ours. */
  clusterInfo(version: string): WireMap {
    const { pool, table } = this.placement;
    const names = (role: Role): string[] =>
      pool
        .all(role)
        .filter(inRotation)
        .map((worker) => serverNameOf(worker.origin));
    const workers = (role: Role): WireMap[] =>
      pool.all(role).map((worker) => ({
        server: serverNameOf(worker.origin),
        url: worker.origin,
        ready: inRotation(worker),
        in_flight: table.load(role, worker.origin),
      }));
    const configs: Record<string, WireMap> = {};
    for (const role of ["context", "generation"] as const) {
      const type = this.#routerOf(role);
      if (STATEFUL.has(type))
        configs[role] = { tokens_per_block: this.#tokensPerBlock(role), kv_cache_hash_algo: TOKEN_HASH_ALGO, router_type: type };
    }
    return {
      is_ready: this.ready(),
      // Only workers in rotation: a serving process placing locally (round_robin, load_balancing) follows the coordinator's health checks.
      server_lists: { context: names("context"), generation: names("generation") },
      ...(Object.keys(configs).length === 0 ? {} : { routing_key_configs: configs }),
      implementation: "disagg-proxy",
      version,
      leases: this.#leases.size,
      requests: this.#leases.requests,
      workers: { context: workers("context"), generation: workers("generation") },
    };
  }

  /** Settles once the routers learned from every leg finished so far. */
  async learned(): Promise<void> {
    await Promise.all(this.#learning);
  }

  /** Releases every lease (the coordinator stops); their routers learn nothing from them. */
  stop(): void {
    for (const lease of this.#leases.takeAll()) lease.held.placed.reservation.release();
  }

  /** --max-inflight across every serving process, and --max-worker-queue: only a request's first leg is refused. */
  #admit(routing: RoutingRequest | undefined): void {
    const limit = this.#settings.maxInflight;
    if (this.#leases.full)
      throw new ProxyError("OVERLOADED", 503, `The coordinator holds ${this.#leases.size} placements, its most; retry shortly`);
    if (limit > 0 && this.#leases.requests >= limit)
      throw new ProxyError("OVERLOADED", 429, `${limit} requests are in flight, the most --max-inflight allows; retry shortly`);
    this.placement.refuseWhenSaturated(routing);
  }

  #release(lease: Lease<Held>, success: boolean): void {
    const { placed, routing } = lease.held;
    placed.reservation.release();
    const learning = this.placement.finished(lease.role, placed.worker.origin, routing, success);
    this.#learning.add(learning);
    void learning.then(() => this.#learning.delete(learning));
  }

  #expired(lease: Lease<Held>): void {
    this.metrics.expired(lease.role);
    this.#logger.warn("stale coordinator reservation released", {
      role: lease.role,
      req_id: lease.reqId.toString(),
      worker: lease.held.placed.worker.origin,
      after_s: this.#settings.reservationTimeoutMs / 1000,
    });
    this.#release(lease, false);
  }

  /** What upstream's routers answer beside the server: server_info always, the cache match for kv_cache_aware. */
  #infoOf(role: Role, placed: RoutedPlacement, routing: RoutingRequest | undefined): WireMap {
    // The worker's GET /server_info, as upstream's routers answer it: a generation_first serving process sends the context worker's disaggregated_params on.
    const serverInfo = wireOf(placed.worker.serverInfo ?? {});
    if (this.#routerOf(role) !== "kv_cache_aware") return { server_info: serverInfo };
    const hashes = routing?.knownBlocks?.tokens ?? [];
    return {
      block_hashes: hashes,
      hash_algo: TOKEN_HASH_ALGO,
      match_length: placed.matchedTokens,
      num_tokens: placed.totalTokens,
      server_info: serverInfo,
    };
  }

  #routerOf(role: Role): RouterType {
    return role === "context" ? this.#settings.contextRouter : this.#settings.generationRouter;
  }

  #tokensPerBlock(role: Role): number {
    const options = this.#settings.routerOptions?.[role];
    return options?.tokensPerBlock ?? (this.#routerOf(role) === "conversation" ? 128 : 32);
  }
}

/** The origin an `exclude_server` names (`host:port`, or a URL kept as it is). */
function originOf(server: string | undefined): string | undefined {
  if (server === undefined) return undefined;
  return server.includes("://") ? server.replace(/\/+$/, "") : `http://${server}`;
}

/** A worker's JSON as MessagePack: an integer beyond 2^53 (kept as raw JSON text) as an integer. */
function wireOf(object: JsonObject): WireMap {
  const out: Record<string, WireValue> = {};
  for (const [key, value] of Object.entries(object)) if (value !== undefined) out[key] = wireValueOf(value);
  return out;
}

function wireValueOf(value: JsonValue): WireValue {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) return value.map(wireValueOf);
  if (JSON.isRawJSON(value)) return /^-?\d+$/.test(value.rawJSON) ? BigInt(value.rawJSON) : Number(value.rawJSON);
  return wireOf(value);
}
