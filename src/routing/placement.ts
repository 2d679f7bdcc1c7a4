import type { ProxyConfig, Role } from "../config/types.ts";
import { ProxyError } from "../errors.ts";
import { KvEventPoller, type EventsFetch, type RoutingWarning } from "./kv-events.ts";
import { ReservationTable, type Reservation } from "./reservations.ts";
import type { SharedLoad } from "./shared-load.ts";
import { WorkerLoads, type ReportingChange } from "./worker-loads.ts";
import { chooseModel, modelNotFoundMessage, servesChoice, type ModelChoice } from "./model-choice.ts";
import { ModelRouters, type RouterSettings } from "./model-routers.ts";
import { modelStatusOf, type ModelStatus } from "./model-status.ts";
import { readyWorkers } from "./ready-workers.ts";
import { remoteRoutersOf, type RemoteHttpRouter } from "./remote-http-router.ts";
import type { RouteHint } from "./router-contract.ts";
import { leastLoadedOf, roundRobinCursor } from "./simple-routers.ts";
import { contentWeight, NO_ROUTING, withoutSubagentAffinity, type RoutingRequest } from "./routing-request.ts";
import { WorkerPool, type WorkerEntry } from "../workers/worker-pool.ts";
import type { Capability } from "../workers/protocol.ts";
import { OutlierDetector, type OutlierSettings } from "../workers/outlier-detector.ts";
import { silentLogger, type Logger } from "../observability/logger.ts";
import type { Coordination, PlacedBy } from "./coordination.ts";

export type { ModelRoleStatus, ModelStatus } from "./model-status.ts";

export interface PlacementRequest {
  readonly role: Role;
  readonly requestKey: bigint;
  /** The paired leg's worker: a URL in both lists is never paired with itself. */
  readonly exclude: string | undefined;
  /** Workers this leg already failed on: used only when no other worker is ready. */
  readonly avoid: readonly string[];
  /** What the routers may know of the request; without it they route as if the prompt were empty. */
  readonly routing?: RoutingRequest;
  /** Only workers whose protocol has this capability (a Responses hand-off in a mixed fleet). */
  readonly requires?: Capability | undefined;
  /** The request's: a router that asks a server (remote_http) stops when the client is gone. */
  readonly signal?: AbortSignal | undefined;
}

export interface Placed {
  readonly worker: WorkerEntry;
  readonly reservation: Reservation;
  /** The attention-DP rank a router server chose (remote_http): the leg's body carries it (disaggregated_params.route_hint). */
  readonly routeHint?: RouteHint;
}

/** A placement the routers made: what they know of the prompt's cache on the chosen worker. */
export interface RoutedPlacement extends Placed {
  /** Estimated prompt tokens already cached on the worker (0 when the router does not know). */
  readonly matchedTokens: number;
  /** The prompt's tokens (estimated from text when the ids are unknown). */
  readonly totalTokens: number;
  /** With a coordinator configured: whether it or this proxy placed the leg. */
  readonly placedBy?: PlacedBy;
}

/** What placement reads: its routers', its outlier detector's (ejection off without outlierFailures) and its own. */
export type PlacementConfig = RouterSettings &
  OutlierSettings &
  Pick<ProxyConfig, "contextServers" | "generationServers"> &
  Partial<Pick<ProxyConfig, "maxInflightPerWorker" | "discovery" | "benchmarkGenerationOnly" | "modelAliases">> &
  Partial<Pick<ProxyConfig, "subagentAffinityScope" | "workerLoadIntervalMs" | "maxWorkerQueue">>;

/** How an attempt placed on a worker ended, as the routers and the outlier detector hear it. */
export interface AttemptOutcome {
  /** Undefined: the worker answered in full. */
  readonly error: ProxyError | undefined;
  /** "worker" (default): it counts for or against the worker; "nothing" (the proxy stopped it, the failure
   * is not the worker's): only the routers hear it; "untried" (lost unread, a start-up 503): neither. */
  readonly says?: "worker" | "nothing" | "untried";
  /** The attempt's reservation: released now, unless the attempt streamed (its request's end releases it). */
  readonly reservation: Reservation;
  readonly streamed?: boolean;
}

export interface PlacementDeps {
  /** How calls to workers are made (worker CA, API key): kv_cache_aware reads /kv_cache_events with it. */
  readonly fetch?: EventsFetch;
  /** A router could not learn from a worker (its KV events failed); reported once per worker until it recovers. */
  readonly onWarning?: RoutingWarning;
  /** A worker started or stopped reporting its load (told once per change). */
  readonly onLoadReporting?: ReportingChange;
  /** The load every event loop of the process shares (num_workers > 1); this loop's own table when absent. */
  readonly shared?: SharedLoad | undefined;
  /** Where ejections are told (default: nowhere). */
  readonly logger?: Logger;
  /** disagg_coordinator_url: the coordinator that places the stateful routers' legs. */
  readonly coordinator?: Coordination | undefined;
}

/** A report older than this many poll intervals is stale: the proxy's own counts stand. */
const STALE_AFTER_INTERVALS = 3;

/** Picks and reserves workers: the routers, the pool and the reservation table together. */
export class Placement {
  readonly pool: WorkerPool;
  readonly table: ReservationTable;
  /** Workers' own load reports, when they are polled (--worker-load-interval-ms). */
  readonly loads: WorkerLoads | undefined;
  /** Ejects workers whose requests keep failing although their health checks pass (off without outlierFailures). */
  readonly outliers: OutlierDetector;
  /** disagg_coordinator_url: places the stateful routers' legs (coordinated-placement.ts). */
  readonly coordinator: Coordination | undefined;
  /** remote_http: the router server client of each role whose router is one (remote-placement.ts). */
  readonly remote: Readonly<Partial<Record<Role, RemoteHttpRouter>>>;
  readonly #routers: ModelRouters;
  readonly #perWorkerLimit: number;
  readonly #aliases: NonNullable<PlacementConfig["modelAliases"]>;
  /** subagent_affinity_scope "both": generation is placed by the parent's session too, not only context. */
  readonly #generationByParent: boolean;
  readonly #maxWorkerQueue: number;
  /** Ties of placeLeastLoaded, taken in turn (its own cursor: the routers' turns stay theirs). */
  readonly #leastLoadedTurn = roundRobinCursor();

  constructor(config: PlacementConfig, deps: PlacementDeps = {}) {
    this.#perWorkerLimit = config.maxInflightPerWorker ?? 0;
    this.table = new ReservationTable(deps.shared);
    this.#generationByParent = config.subagentAffinityScope === "both";
    const cluster = config.discovery?.kind === "cluster" ? config.discovery : undefined;
    // Generation-only benchmark mode never calls (or health-checks) a context worker.
    const benchmark = config.benchmarkGenerationOnly === true;
    const minimal = { context: benchmark ? 0 : (cluster?.minimalContext ?? 1), generation: cluster?.minimalGeneration ?? 1 };
    this.pool = new WorkerPool(benchmark ? [] : config.contextServers, config.generationServers, minimal);
    this.outliers = new OutlierDetector(this.pool, config, deps.logger ?? silentLogger);
    const events = new KvEventPoller({ fetch: deps.fetch, onWarning: deps.onWarning });
    const interval = config.workerLoadIntervalMs ?? 0;
    const loads =
      interval > 0 ? new WorkerLoads(this.table, interval * STALE_AFTER_INTERVALS, { onChange: deps.onLoadReporting }) : undefined;
    this.loads = loads;
    this.#maxWorkerQueue = loads === undefined ? 0 : (config.maxWorkerQueue ?? 0);
    this.#routers = new ModelRouters(config, { table: this.table, events, loads, served: () => this.pool.servedModels() });
    this.#aliases = config.modelAliases ?? [];
    this.coordinator = deps.coordinator;
    this.remote = remoteRoutersOf(config, deps.onWarning ?? (() => {}));
  }

  /** The workers a leg may be placed on, those it has not failed on first: what a router server chooses among. */
  candidatesFor(request: PlacementRequest): WorkerEntry[] {
    const ready = this.#ready(request, this.#modelOf(request.routing));
    const preferred = request.avoid.length === 0 ? ready : ready.filter((worker) => !request.avoid.includes(worker.origin));
    return preferred.length > 0 ? preferred : ready;
  }

  /** Which workers a request for `model` may use (routing/model-choice.ts). */
  chooseModel(model: string | undefined): ModelChoice {
    return chooseModel(model, this.pool.servedModels(), this.#aliases);
  }

  /** Readiness and in-flight load per served model (empty when no worker named its model). */
  modelStatus(): ModelStatus[] {
    return modelStatusOf(this.pool, this.table);
  }

  /**
   * Reserves a ready worker of the role, preferring one this leg has not failed on. The
   * reservation carries the request's content weight (the conversation router's load).
   */
  place(request: PlacementRequest): RoutedPlacement {
    const { role } = request;
    const choice = this.#modelOf(request.routing);
    let ready = this.#ready(request, choice);
    const weight = request.routing === undefined ? 0 : contentWeight(request.routing);
    // Another event loop may take a worker's last slot between the pick and the reservation
    // (num_workers > 1): the reservation checks the limit again, atomically, and a worker lost
    // that way is left out of the next pick.
    for (;;) {
      const preferred = request.avoid.length === 0 ? ready : ready.filter((worker) => !request.avoid.includes(worker.origin));
      const router = this.#routers.of(choice.key)[role];
      const pick = router.pick(preferred.length > 0 ? preferred : ready, this.routingFor(role, request.routing));
      if (!pick) {
        const serving = choice.kind === "model" ? ` serving ${choice.key}` : "";
        throw new ProxyError("NO_WORKER", 503, `No ${role} worker${serving} is available`);
      }
      const reservation = this.table.tryReserve(request.requestKey, role, pick.worker.origin, weight, this.#perWorkerLimit);
      if (reservation !== undefined)
        return { worker: pick.worker, reservation, matchedTokens: pick.matchedTokens, totalTokens: pick.totalTokens };
      ready = ready.filter((worker) => worker !== pick.worker);
      if (ready.length === 0) throw overloaded(role);
    }
  }

  /**
   * Reserves the least loaded worker of the role that `place` could use, one not in `avoid`
   * first, ties taken in turn. Load is what the load_balancing router weighs: the worker's own
   * report blended in when polled (--worker-load-interval-ms), else the proxy's in-flight count.
   * Not the routers' pick: work the proxy makes for itself (a hand-off settle) must neither move
   * a round robin nor teach a router a placement no client asked for.
   */
  placeLeastLoaded(request: PlacementRequest): Placed {
    const { role } = request;
    const ready = this.#ready(request, this.#modelOf(request.routing));
    const loadOf = (worker: WorkerEntry): number => this.loads?.load(role, worker.origin) ?? this.table.load(role, worker.origin);
    const preferred = request.avoid.length === 0 ? ready : ready.filter((worker) => !request.avoid.includes(worker.origin));
    const worker = leastLoadedOf(preferred.length > 0 ? preferred : ready, loadOf, this.#leastLoadedTurn);
    if (worker === undefined) throw new ProxyError("NO_WORKER", 503, `No ${role} worker is available`);
    return this.reserveAgain(role, request.requestKey, worker, request.routing);
  }

  /**
   * Reserves a worker chosen earlier again (a pinned retry: a generation-first hand-off names
   * it), under the same per-worker limit as any placement.
   */
  reserveAgain(role: Role, requestKey: bigint, worker: WorkerEntry, routing: RoutingRequest | undefined): Placed {
    const weight = routing === undefined ? 0 : contentWeight(routing);
    const reservation = this.table.tryReserve(requestKey, role, worker.origin, weight, this.#perWorkerLimit);
    if (reservation === undefined) throw overloaded(role);
    return { worker, reservation };
  }

  /** Whether the role's router learns from how legs ended (finished() needs their routing request). */
  learns(role: Role): boolean {
    return this.#routers.learns[role];
  }

  /**
   * An attempt placed on `origin` ended: its reservation is released, the routers that learn
   * hear how it went, and the outlier detector whether it counts against the worker. The
   * promise settles when the routers' learning is done and never rejects.
   */
  attemptEnded(role: Role, origin: string, routing: RoutingRequest | undefined, outcome: AttemptOutcome): Promise<void> {
    const { reservation, error } = outcome;
    if (error === undefined) reservation.completed?.();
    if (outcome.streamed !== true) reservation.release();
    const says = outcome.says ?? "worker";
    if (says === "untried") return Promise.resolve();
    if (says === "worker") this.outliers.attemptEnded(role, origin, error);
    return this.finished(role, origin, routing, error === undefined);
  }

  /**
   * A leg placed on `origin` ended (`success`: the worker answered in full). Routers that learn
   * from placements record it; kv_cache_aware reads the worker's KV events in the background.
   * The promise settles when that learning is done and never rejects: callers need not await it.
   */
  finished(role: Role, origin: string, routing: RoutingRequest | undefined, success: boolean): Promise<void> {
    // A replica that delegates learns nothing itself: the coordinator reads each worker's KV events, once.
    if (this.coordinator?.delegates(role) === true) return Promise.resolve();
    const choice = this.chooseModel(routing?.model);
    if (choice.kind === "unknown") return Promise.resolve();
    const router = this.#routers.of(choice.key)[role];
    if (router.finished === undefined) return Promise.resolve();
    const worker = this.pool.entry(role, origin);
    if (worker === undefined) return Promise.resolve();
    return Promise.resolve(router.finished(worker, routing ?? NO_ROUTING, success));
  }

  /** The request's model choice; a model no worker serves is refused here, before any worker sees it. */
  #modelOf(routing: RoutingRequest | undefined): Exclude<ModelChoice, { kind: "unknown" }> {
    const choice = this.chooseModel(routing?.model);
    if (choice.kind !== "unknown") return choice;
    throw new ProxyError("MODEL_NOT_FOUND", 404, modelNotFoundMessage(choice.requested, this.pool.servedModels()));
  }

  /** What the role's router sees: outside the affinity scope, a sub-agent is placed by its own conversation. */
  routingFor(role: Role, routing: RoutingRequest | undefined): RoutingRequest | undefined {
    return routing === undefined || role === "context" || this.#generationByParent ? routing : withoutSubagentAffinity(routing);
  }

  /**
   * --max-worker-queue: when every ready worker of either role (serving the request's model)
   * reports a queue deeper than the bound, the request is refused rather than piled on. The
   * pipeline asks once, before a request's first leg (a context leg would be wasted on a
   * request no generation worker can take); a later leg is never refused so. A worker without
   * a fresh report is not over the bound; a model no worker serves is refused by `place`.
   */
  refuseWhenSaturated(routing: RoutingRequest | undefined): void {
    const loads = this.loads;
    if (this.#maxWorkerQueue <= 0 || loads === undefined) return;
    const choice = this.chooseModel(routing?.model);
    if (choice.kind === "unknown") return;
    for (const role of ["context", "generation"] as const) {
      const ready = this.pool.ready(role).filter((worker) => servesChoice(worker, choice));
      if (ready.length > 0 && ready.every((worker) => (loads.waiting(worker.origin) ?? 0) > this.#maxWorkerQueue)) {
        throw new ProxyError(
          "WORKERS_BUSY",
          429,
          `Every ${role} worker has more than ${this.#maxWorkerQueue} requests waiting; retry shortly`,
        );
      }
    }
  }

  /** The workers the request may be placed on (readyWorkers); OVERLOADED when some qualify but all are at the limit. */
  #ready(request: PlacementRequest, choice: ModelChoice): WorkerEntry[] {
    const { ready, candidates } = readyWorkers(this.pool, request, choice, (role, origin) => this.#full(role, origin));
    if (ready.length === 0 && candidates > 0) throw overloaded(request.role);
    return ready;
  }

  #full(role: Role, origin: string): boolean {
    return this.#perWorkerLimit > 0 && this.table.load(role, origin) >= this.#perWorkerLimit;
  }
}

function overloaded(role: Role): ProxyError {
  return new ProxyError("OVERLOADED", 429, `Every ${role} worker is at its in-flight limit; retry shortly`);
}
