import type { Role } from "../config/types.ts";
import { inRotation, type WorkerPool } from "../workers/worker-pool.ts";
import type { ReservationTable } from "./reservations.ts";

/** One served model's workers of a role: how many are listed, how many ready, the requests they hold. */
export interface ModelRoleStatus {
  readonly workers: number;
  readonly ready: number;
  readonly inFlight: number;
}

export interface ModelStatus {
  readonly model: string;
  readonly context: ModelRoleStatus;
  readonly generation: ModelRoleStatus;
}

/** Readiness and in-flight load per served model (empty when no worker named its model). */
export function modelStatusOf(pool: WorkerPool, table: ReservationTable): ModelStatus[] {
  const ofRole = (role: Role, model: string): ModelRoleStatus => {
    const workers = pool.all(role).filter((worker) => worker.models?.includes(model) === true);
    const inFlight = workers.reduce((sum, worker) => sum + table.load(role, worker.origin), 0);
    return { workers: workers.length, ready: workers.filter(inRotation).length, inFlight };
  };
  return pool.servedModels().map((model) => ({ model, context: ofRole("context", model), generation: ofRole("generation", model) }));
}
