import type { Role } from "../config/types.ts";
import { inRotation, type WorkerPool, type WorkerEntry } from "../workers/worker-pool.ts";
import { servesChoice, type ModelChoice } from "./model-choice.ts";
import type { Capability } from "../workers/protocol.ts";

/**
 * The workers of the role a request may be placed on: in rotation, not the paired leg's, with
 * the required capability, serving its model, not `full` (at the per-worker limit); and how
 * many qualify but for that limit. One pass, no intermediate lists: a placement's cost stays
 * small in a fleet of hundreds.
 */
export function readyWorkers(
  pool: WorkerPool,
  request: { readonly role: Role; readonly exclude: string | undefined; readonly requires?: Capability | undefined },
  choice: ModelChoice,
  full: (role: Role, origin: string) => boolean,
): { ready: WorkerEntry[]; candidates: number } {
  const { requires, role } = request;
  let candidates = 0;
  const ready: WorkerEntry[] = [];
  for (const worker of pool.all(role)) {
    if (
      !inRotation(worker) ||
      worker.origin === request.exclude ||
      (requires !== undefined && !worker.protocol.accepts.has(requires)) ||
      !servesChoice(worker, choice)
    )
      continue;
    candidates++;
    if (!full(role, worker.origin)) ready.push(worker);
  }
  return { ready, candidates };
}
