/** Routers that know nothing of prompts: round_robin, and least loaded by a measure of load. */

import type { Router, RouterPick } from "./router-contract.ts";
import { estimatedPromptTokens, type RoutingRequest } from "./routing-request.ts";
import type { WorkerEntry } from "../workers/worker-pool.ts";

/** A pick that knows nothing of the prompt's cache. */
export function plainPick(worker: WorkerEntry | undefined, request: RoutingRequest | undefined): RouterPick | undefined {
  return worker === undefined ? undefined : { worker, matchedTokens: 0, totalTokens: estimatedPromptTokens(request) };
}

/** A round-robin cursor over any list; it advances on every call. */
export type Cursor = <T>(items: readonly T[]) => T | undefined;

/**
 * A round-robin cursor: each call takes the next turn of `turn` (this cursor's own count by
 * default; the reservation table's for a role, which every event loop of the process shares).
 */
export function roundRobinCursor(turn: () => number = ownTurns()): Cursor {
  return <T>(items: readonly T[]): T | undefined => {
    if (items.length === 0) return undefined;
    return items[turn() % items.length];
  };
}

function ownTurns(): () => number {
  let cursor = 0;
  return () => {
    const turn = cursor;
    cursor = (cursor + 1) % 1_000_000_007;
    return turn;
  };
}

/** Cycles through the candidates. */
export function roundRobin(turn?: () => number): Router {
  const next = roundRobinCursor(turn);
  return { pick: (candidates, request) => plainPick(next(candidates), request) };
}

/** The candidates of least load (as `loadOf` measures it), one of them taken round-robin. */
export function leastLoadedOf(
  candidates: readonly WorkerEntry[],
  loadOf: (worker: WorkerEntry) => number,
  next: Cursor,
): WorkerEntry | undefined {
  let best = Number.POSITIVE_INFINITY;
  let tied: WorkerEntry[] = [];
  for (const worker of candidates) {
    const load = loadOf(worker);
    if (load < best) {
      best = load;
      tied = [worker];
    } else if (load === best) tied.push(worker);
  }
  return next(tied);
}

/** Least load; ties are broken round-robin so equal workers share load. */
export function leastLoaded(loadOf: (worker: WorkerEntry) => number, turn?: () => number): Router {
  const next = roundRobinCursor(turn);
  return { pick: (candidates, request) => plainPick(leastLoadedOf(candidates, loadOf, next), request) };
}
