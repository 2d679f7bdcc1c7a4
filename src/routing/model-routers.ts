import type { ProxyConfig, Role } from "../config/types.ts";
import type { KvEventPoller } from "./kv-events.ts";
import { UNKNOWN_MODEL } from "./model-choice.ts";
import type { ReservationTable } from "./reservations.ts";
import { createRouter, type Router, type RouterContext } from "./routers.ts";
import type { WorkerLoads } from "./worker-loads.ts";

export type RouterSettings = Pick<ProxyConfig, "contextRouter" | "generationRouter"> &
  Partial<Pick<ProxyConfig, "routerOptions" | "nodeId">>;

/** What every router reads: the reservation table, the KV events, the workers' load reports when polled. */
export interface RouterSources {
  readonly table: ReservationTable;
  readonly events: KvEventPoller;
  readonly loads: WorkerLoads | undefined;
  /** The models the workers serve now. */
  readonly served: () => readonly string[];
}

/** Each served model's routers: conversation stickiness, KV blocks and cursors are per model. */
export class ModelRouters {
  readonly #routers = new Map<string, Record<Role, Router>>();
  readonly #newRouters: (model: string) => Record<Role, Router>;
  readonly #served: () => readonly string[];
  /** Whether the role's router learns from how legs ended. */
  readonly learns: Readonly<Record<Role, boolean>>;

  constructor(config: RouterSettings, sources: RouterSources) {
    const { table, loads } = sources;
    const common = { table, nodeId: config.nodeId ?? 0, events: sources.events };
    const contextOf = (role: Role, model: string): RouterContext => ({
      ...common,
      role,
      // One turn sequence per role and model, as each model has its own routers.
      turn: () => table.turn(role, model),
      options: config.routerOptions?.[role] ?? {},
      ...(loads === undefined ? {} : { load: (origin: string) => loads.load(role, origin) }),
    });
    this.#newRouters = (model) => ({
      context: createRouter(config.contextRouter, contextOf("context", model)),
      generation: createRouter(config.generationRouter, contextOf("generation", model)),
    });
    this.#served = sources.served;
    const first = this.of(UNKNOWN_MODEL);
    this.learns = { context: first.context.finished !== undefined, generation: first.generation.finished !== undefined };
  }

  /**
   * A model's routers, made on its first request. Models no worker serves any more are
   * forgotten then, so the routers kept are bounded by what the workers serve.
   */
  of(key: string): Record<Role, Router> {
    let routers = this.#routers.get(key);
    if (routers === undefined) {
      const served = this.#served();
      for (const known of this.#routers.keys()) if (known !== UNKNOWN_MODEL && !served.includes(known)) this.#routers.delete(known);
      routers = this.#newRouters(key);
      this.#routers.set(key, routers);
    }
    return routers;
  }
}
