import type { RouterType } from "../config/types.ts";
import type { ReservationTable } from "./reservations.ts";
import type { Role, WorkerEntry } from "./worker-pool.ts";

/** Chooses a worker among candidates; `undefined` when none is left. */
export interface Router {
  pick(candidates: readonly WorkerEntry[]): WorkerEntry | undefined;
}

export function createRouter(type: RouterType, role: Role, table: ReservationTable): Router {
  return type === "load_balancing" ? leastLoaded(role, table) : roundRobin();
}

/** Cycles through the candidates; the cursor advances on every pick. */
function roundRobin(): Router {
  let cursor = 0;
  return {
    pick(candidates) {
      if (candidates.length === 0) return undefined;
      const worker = candidates[cursor % candidates.length];
      cursor = (cursor + 1) % 1_000_000_007;
      return worker;
    },
  };
}

/** Least in-flight reservations; ties are broken round-robin so equal workers share load. */
function leastLoaded(role: Role, table: ReservationTable): Router {
  const tieBreak = roundRobin();
  return {
    pick(candidates) {
      let best = Number.POSITIVE_INFINITY;
      let tied: WorkerEntry[] = [];
      for (const worker of candidates) {
        const load = table.load(role, worker.origin);
        if (load < best) {
          best = load;
          tied = [worker];
        } else if (load === best) tied.push(worker);
      }
      return tieBreak.pick(tied);
    },
  };
}
