/**
 * A leg's placement when a coordinator is configured (disagg_coordinator_url): the stateful
 * routers' legs (conversation, kv_cache_aware, as upstream's CoordinatorClient._maybe_delegate,
 * tensorrt_llm/serve/disagg_coordinator.py @ 0186c597) are asked of the coordinator; the
 * others, and every leg while it is unreachable, are placed by this proxy's own routers. The
 * coordinator's pick is reserved here too (the dashboard, /cluster_info and load_balancing
 * read it), and the reservation's release sends the leg's one /finish.
 */

import type { Role } from "../config/types.ts";
import { ProxyError } from "../errors.ts";
import { normaliseUrl } from "../config/urls.ts";
import { inRotation, type WorkerEntry } from "../workers/worker-pool.ts";
import type { CoordinatorLease } from "./coordinator-client.ts";
import { serverNameOf, type WireMap } from "./coordinator-wire.ts";
import { modelNotFoundMessage, servesChoice } from "./model-choice.ts";
import type { Placed, Placement, PlacementRequest, RoutedPlacement } from "./placement.ts";
import { placeRemotely } from "./remote-placement.ts";
import type { Reservation } from "./reservations.ts";
import { contentWeight, estimatedPromptTokens, type RoutingRequest } from "./routing-request.ts";

/**
 * Places a leg: through the coordinator when one is configured and the role's router delegates,
 * else (and whenever it is unreachable) here. A refusal of the coordinator (no worker, every
 * worker at its limit) is the client's answer, as a local refusal would be.
 */
export function placeLeg(placement: Placement, request: PlacementRequest): Promise<RoutedPlacement> | RoutedPlacement {
  const remote = placement.remote[request.role];
  if (remote !== undefined) return placeRemotely(placement, remote, request);
  if (placement.coordinator === undefined) return placement.place(request);
  return coordinated(placement, request, () => placement.place(request), request.routing);
}

/**
 * A hand-off settle's generation worker (pipeline/handoff/settler.ts): the coordinator's, asked
 * with no routing key (its routers place it least loaded and learn nothing), so the worker's
 * limit counts it across replicas; this proxy's least loaded worker when the coordinator is away.
 */
export function placeSettle(placement: Placement, request: PlacementRequest): Promise<Placed> | Placed {
  const local = (): RoutedPlacement => ({ ...placement.placeLeastLoaded(request), matchedTokens: 0, totalTokens: 0 });
  if (placement.coordinator === undefined) return local();
  return coordinated(placement, request, local, undefined);
}

async function coordinated(
  placement: Placement,
  request: PlacementRequest,
  placeHere: () => RoutedPlacement,
  keyedBy: RoutingRequest | undefined,
): Promise<RoutedPlacement> {
  const coordinator = placement.coordinator;
  const local = (): RoutedPlacement => ({ ...placeHere(), placedBy: "local" });
  if (coordinator === undefined || !coordinator.client.reachable || !coordinator.delegates(request.role)) return local();
  const choice = placement.chooseModel(request.routing?.model);
  if (choice.kind === "unknown")
    throw new ProxyError("MODEL_NOT_FOUND", 404, modelNotFoundMessage(choice.requested, placement.pool.servedModels()));
  const routing = keyedBy === undefined ? undefined : placement.routingFor(request.role, keyedBy);
  const outcome = await coordinator.client.select({
    role: request.role,
    routingKey: coordinator.keyFor(request.role, routing),
    reqId: request.requestKey,
    excludeServer: request.exclude === undefined ? undefined : serverNameOf(request.exclude),
  });
  if (outcome.kind === "unreachable") return local();
  if (outcome.kind === "refused") {
    if (outcome.status === 429)
      throw new ProxyError("OVERLOADED", 429, `Every ${request.role} worker is at its in-flight limit; retry shortly`);
    throw new ProxyError("NO_WORKER", 503, `No ${request.role} worker is available (coordinator: ${outcome.message})`);
  }
  const worker = workerOf(placement, request.role, outcome.server);
  const usable =
    worker !== undefined &&
    inRotation(worker) &&
    servesChoice(worker, choice) &&
    (request.requires === undefined || worker.protocol.accepts.has(request.requires));
  if (!usable) {
    // A worker this proxy does not list, or cannot use for this request: placed here instead.
    outcome.lease.finish(false);
    coordinator.unusable(request.role, outcome.server);
    return local();
  }
  const reserved = placement.table.reserve(
    request.requestKey,
    request.role,
    worker.origin,
    request.routing === undefined ? 0 : contentWeight(request.routing),
  );
  return {
    worker,
    reservation: leased(reserved, outcome.lease),
    matchedTokens: matchedTokensOf(outcome.info),
    totalTokens: estimatedPromptTokens(request.routing),
    placedBy: "coordinator",
  };
}

function workerOf(placement: Placement, role: Role, server: string): WorkerEntry | undefined {
  const origin = normaliseUrl(server);
  return origin === undefined ? undefined : placement.pool.entry(role, origin);
}

/** kv_cache_aware's answer says how much of the prompt the worker holds (upstream's info.match_length, in tokens). */
function matchedTokensOf(info: WireMap): number {
  const matched = info["match_length"];
  return typeof matched === "bigint" ? Number(matched) : typeof matched === "number" ? matched : 0;
}

/**
 * The local reservation and the coordinator's lease as one: released once, the lease finished
 * with it. Its success is read at the end of the turn: a streamed leg's request end releases
 * its reservations before the attempt says it completed (request/context.ts `end`).
 */
function leased(local: Reservation, lease: CoordinatorLease): Reservation {
  let completed = false;
  let kept: Promise<unknown> | undefined;
  return {
    requestKey: local.requestKey,
    role: local.role,
    origin: local.origin,
    completed: () => {
      completed = true;
    },
    // The worker still runs it: the coordinator counts it until it ends (its client is gone: not a success).
    keepUntil: (settled) => {
      kept = settled;
    },
    release: () => {
      local.release();
      if (kept === undefined) lease.finish(() => completed);
      else
        void kept.then(
          () => lease.finish(false),
          () => lease.finish(false),
        );
    },
  };
}
