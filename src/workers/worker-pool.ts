import type { Role } from "../config/types.ts";
import type { JsonObject } from "../json/json.ts";
import { workerProtocol, type WorkerProtocol } from "./protocol.ts";

/** A worker's record of consecutive failed attempts and ejections (outlier-detector.ts). */
export interface OutlierState {
  failures: number;
  ejections: number;
  /** Out of rotation until `until` (performance.now ms) has passed and a request or check succeeds. */
  ejected: { readonly until: number; readonly reason: string } | undefined;
  /** When it last came back from an ejection. */
  backSince?: number | undefined;
}

/** Takes requests: ready by its health checks and not ejected for its requests' failures. */
export function inRotation(worker: WorkerEntry): boolean {
  return worker.ready && worker.outlier?.ejected === undefined;
}

/** One worker as one role sees it. A URL in both lists is two entries with the same origin. */
export interface WorkerEntry {
  readonly origin: string;
  readonly role: Role;
  ready: boolean;
  /** Its requests' recent failures and its ejections (outlier-detector.ts); unset until one ends. */
  outlier?: OutlierState | undefined;
  /**
   * Its last /health said it is still loading its model (503 with `x-trtllm-server-state:
   * starting`, tensorrt_llm/serve/readiness.py): not ready, but not failing either. Unset until checked.
   */
  starting?: boolean;
  /** GET /server_info, fetched once the worker is ready (generation-first needs it). */
  serverInfo: JsonObject | undefined;
  /**
   * Its version and the optional fields it accepts, learnt (GET /version) each time it joins;
   * one object shared by an origin's entries of both roles, so what one leg learns both use.
   */
  protocol: WorkerProtocol;
  /** The version its etcd metadata registration announced, used when GET /version says nothing. */
  advertisedVersion?: string | undefined;
  /**
   * The model ids it serves, learnt from its GET /v1/models each time it joins (a registration
   * names none: upstream's WorkerInfo has no model); undefined while unknown. Set through
   * WorkerPool.learnModels only.
   */
  models?: readonly string[] | undefined;
}

/** Model ids read from one worker, at most: a worker cannot make every placement scan a huge list. */
export const MAX_MODELS_PER_WORKER = 64;

function entry(origin: string, role: Role): WorkerEntry {
  return { origin, role, ready: false, serverInfo: undefined, protocol: workerProtocol(undefined, undefined), models: undefined };
}

function entries(origins: readonly string[], role: Role): WorkerEntry[] {
  return origins.map((origin) => entry(origin, role));
}

/** The worker lists of both roles and their readiness. */
export class WorkerPool {
  readonly #byRole: Record<Role, WorkerEntry[]>;
  readonly #minimal: Readonly<Record<Role, number>>;
  /** Each role's entries by origin, rebuilt when a list changes. */
  #byOrigin: Record<Role, ReadonlyMap<string, WorkerEntry>> | undefined;
  /** The served model ids of every listed worker, sorted; rebuilt when a list or a worker's models change. */
  #served: readonly string[] | undefined;

  /** `minimal`: ready workers each role needs before the pool is ready (disagg_cluster minimal_instances). */
  constructor(
    contextOrigins: readonly string[],
    generationOrigins: readonly string[],
    minimal: Readonly<Record<Role, number>> = { context: 1, generation: 1 },
  ) {
    this.#byRole = { context: entries(contextOrigins, "context"), generation: entries(generationOrigins, "generation") };
    this.#minimal = minimal;
  }

  get minimal(): Readonly<Record<Role, number>> {
    return this.#minimal;
  }

  all(role: Role): readonly WorkerEntry[] {
    return this.#byRole[role];
  }

  /** In rotation: ready (health checks) and not ejected (its requests, outlier-detector.ts). */
  ready(role: Role): WorkerEntry[] {
    return this.#byRole[role].filter(inRotation);
  }

  /**
   * A worker answered a request with its start-up 503 (it restarted since its last health
   * check): out of rotation at once, every role of its origin, until a health check passes
   * again (health-monitor.ts takes it back as it takes any worker not ready). True when it was
   * ready until now.
   */
  markStarting(origin: string): boolean {
    const roles = this.entriesOf(origin);
    const wasReady = roles.some((worker) => worker.ready);
    for (const worker of roles) {
      worker.ready = false;
      worker.starting = true;
    }
    return wasReady;
  }

  /**
   * Nothing serves at the origin (a refused connection): out of rotation at once, every role of
   * its origin, until a health check passes (health-monitor.ts takes it back as any worker not
   * ready). True when it was ready until now.
   */
  markGone(origin: string): boolean {
    const roles = this.entriesOf(origin);
    const wasReady = roles.some((worker) => worker.ready);
    for (const worker of roles) worker.ready = false;
    return wasReady;
  }

  /**
   * Replaces a role's list (reload, discovery): workers still listed keep their state;
   * new ones start not ready and join after their first healthy check; removed ones take
   * no new requests (what they are serving runs to its end).
   */
  replace(role: Role, origins: readonly string[]): { added: string[]; removed: string[] } {
    const current = this.#byRole[role];
    const kept = new Map(current.map((worker) => [worker.origin, worker]));
    const next = origins.map((origin) => kept.get(origin) ?? entry(origin, role));
    const added = origins.filter((origin) => !kept.has(origin));
    const removed = current.filter((worker) => !origins.includes(worker.origin)).map((worker) => worker.origin);
    this.#byRole[role] = next;
    this.#listsChanged();
    return { added, removed };
  }

  /**
   * Adds a discovered worker (not ready until its first healthy check); false when already
   * listed. `version`: what its registration announced (etcd metadata), if anything.
   */
  add(role: Role, origin: string, version?: string): boolean {
    const listed = this.#byRole[role].find((worker) => worker.origin === origin);
    if (listed !== undefined) {
      if (version !== undefined) listed.advertisedVersion = version;
      return false;
    }
    this.#byRole[role] = [...this.#byRole[role], { ...entry(origin, role), advertisedVersion: version }];
    this.#listsChanged();
    return true;
  }

  /** Removes a worker from rotation; what it is serving runs to its end. */
  remove(role: Role, origin: string): boolean {
    const before = this.#byRole[role].length;
    this.#byRole[role] = this.#byRole[role].filter((worker) => worker.origin !== origin);
    this.#listsChanged();
    return this.#byRole[role].length < before;
  }

  /** The role's entry of an origin, if listed (constant time: routers report on every leg's end). */
  entry(role: Role, origin: string): WorkerEntry | undefined {
    this.#byOrigin ??= {
      context: new Map(this.#byRole.context.map((worker) => [worker.origin, worker])),
      generation: new Map(this.#byRole.generation.map((worker) => [worker.origin, worker])),
    };
    return this.#byOrigin[role].get(origin);
  }

  /**
   * What an origin serves (its entries of both roles), learnt on (re)join; duplicates and empties
   * dropped, bounded. Read-only by type, not frozen: every placement in a fleet of several models
   * asks each candidate's list, and the runtime's includes() on a frozen array is several times
   * slower (bench/micro/routing-cost.ts, two models).
   */
  learnModels(origin: string, ids: readonly string[]): void {
    const models: readonly string[] = [...new Set(ids.filter((id) => id !== ""))].slice(0, MAX_MODELS_PER_WORKER);
    for (const worker of this.entriesOf(origin)) worker.models = models;
    this.#served = undefined;
  }

  /** Every model id a listed worker serves (ready or not), sorted. */
  servedModels(): readonly string[] {
    this.#served ??= [
      ...new Set([...this.#byRole.context, ...this.#byRole.generation].flatMap((worker) => worker.models ?? [])),
    ].toSorted();
    return this.#served;
  }

  /** Every distinct origin of either role (a URL in both lists once). */
  origins(): string[] {
    return [...new Set([...this.#byRole.context, ...this.#byRole.generation].map((worker) => worker.origin))];
  }

  /** The entries of an origin in both roles (an origin is listed once per role), context first; constant time. */
  entriesOf(origin: string): WorkerEntry[] {
    const context = this.entry("context", origin);
    const generation = this.entry("generation", origin);
    if (context === undefined) return generation === undefined ? [] : [generation];
    return generation === undefined ? [context] : [context, generation];
  }

  /** Ready when each role has its minimal number of ready workers (one by default). */
  isReady(): boolean {
    const enough = (role: Role): boolean => this.ready(role).length >= this.#minimal[role];
    return enough("context") && enough("generation");
  }

  /** A list changed: what is derived from the lists is rebuilt when next asked. */
  #listsChanged(): void {
    this.#served = undefined;
    this.#byOrigin = undefined;
  }
}
