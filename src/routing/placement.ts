import type { ProxyConfig } from "../config/types.ts";
import { ProxyError } from "../errors.ts";
import { ReservationTable, type Reservation } from "./reservations.ts";
import { createRouter, type Router } from "./routers.ts";
import { WorkerPool, type Role, type WorkerEntry } from "./worker-pool.ts";

export interface PlacementRequest {
  readonly role: Role;
  readonly requestKey: bigint;
  /** The paired leg's worker: a URL in both lists is never paired with itself. */
  readonly exclude: string | undefined;
  /** Workers this leg already failed on: used only when no other worker is ready. */
  readonly avoid: readonly string[];
}

export interface Placed {
  readonly worker: WorkerEntry;
  readonly reservation: Reservation;
}

/** Picks and reserves workers: the routers, the pool and the reservation table together. */
export class Placement {
  readonly pool: WorkerPool;
  readonly table = new ReservationTable();
  readonly #routers: Record<Role, Router>;

  readonly #perWorkerLimit: number;

  constructor(
    config: Pick<ProxyConfig, "contextServers" | "generationServers" | "contextRouter" | "generationRouter"> &
      Partial<Pick<ProxyConfig, "maxInflightPerWorker">>,
  ) {
    this.#perWorkerLimit = config.maxInflightPerWorker ?? 0;
    this.pool = new WorkerPool(config.contextServers, config.generationServers);
    this.#routers = {
      context: createRouter(config.contextRouter, "context", this.table),
      generation: createRouter(config.generationRouter, "generation", this.table),
    };
  }

  /** Reserves a ready worker of the role, preferring one this leg has not failed on. */
  place(request: PlacementRequest): Placed {
    const candidates = this.pool.ready(request.role).filter((worker) => worker.origin !== request.exclude);
    const ready = candidates.filter((worker) => !this.#full(request.role, worker.origin));
    if (ready.length === 0 && candidates.length > 0) {
      throw new ProxyError("OVERLOADED", 429, `Every ${request.role} worker is at its in-flight limit; retry shortly`);
    }
    const preferred = ready.filter((worker) => !request.avoid.includes(worker.origin));
    const worker = this.#routers[request.role].pick(preferred.length > 0 ? preferred : ready);
    if (!worker) {
      throw new ProxyError("NO_WORKER", 503, `No ${request.role} worker is available`);
    }
    return { worker, reservation: this.table.reserve(request.requestKey, request.role, worker.origin) };
  }

  #full(role: Role, origin: string): boolean {
    return this.#perWorkerLimit > 0 && this.table.load(role, origin) >= this.#perWorkerLimit;
  }

}
