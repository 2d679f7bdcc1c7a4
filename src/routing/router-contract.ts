/** The contract every router keeps, and what a router is built from. */

import type { Role, RouterOptions } from "../config/types.ts";
import type { KvEventPoller } from "./kv-events.ts";
import type { ReservationTable } from "./reservations.ts";
import type { RoutingRequest } from "./routing-request.ts";
import type { WorkerEntry } from "../workers/worker-pool.ts";

/** A router's choice and what it knows of the prompt's cache on that worker. */
export interface RouterPick {
  readonly worker: WorkerEntry;
  /** Estimated prompt tokens already cached on the worker (0 when the router does not know). */
  readonly matchedTokens: number;
  /** The prompt's tokens (estimated from text when the ids are unknown). */
  readonly totalTokens: number;
  /** The worker's attention-DP rank a router server chose (remote_http): the leg's `disaggregated_params.route_hint`. */
  readonly routeHint?: RouteHint;
}

/** upstream's RouteHint (tensorrt_llm/serve/openai_protocol.py): the rank an attention-DP worker serves the request on. */
export interface RouteHint {
  readonly dp_rank: number;
}

/** Chooses a worker among candidates; `undefined` when none is left. */
export interface Router {
  pick(candidates: readonly WorkerEntry[], request: RoutingRequest | undefined): RouterPick | undefined;
  /**
   * The request finished on that worker: routers that learn from placements record it. The
   * promise (if any) settles once the learning is done and never rejects; callers need not wait.
   */
  finished?(worker: WorkerEntry, request: RoutingRequest, success: boolean): void | Promise<void>;
}

export interface RouterContext {
  readonly role: Role;
  readonly table: ReservationTable;
  readonly options: RouterOptions;
  /** Part of implicit conversation ids (`conv_id:<node>_<n>`). */
  readonly nodeId: number;
  /** Fetches workers' KV cache events (kv_cache_aware). */
  readonly events: KvEventPoller;
  /**
   * A worker's in-flight requests as load_balancing and kv_cache_aware weigh them: its own
   * report blended with the proxy's count when workers' load is polled (worker-loads.ts), else
   * the reservation table's count. Absent: the table's count.
   */
  readonly load?: (origin: string) => number;
  /**
   * Round-robin turns of this router (its role and model): from the reservation table, so with
   * num_workers every event loop takes the next of one sequence. Absent: the router's own count.
   */
  readonly turn?: () => number;
}

/** The in-flight requests a router weighs for a worker of its role. */
export function inFlightOf(context: RouterContext, origin: string): number {
  return context.load === undefined ? context.table.load(context.role, origin) : context.load(origin);
}
