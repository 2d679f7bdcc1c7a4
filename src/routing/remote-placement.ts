/**
 * A leg whose router is remote_http: the router server chooses among the workers this proxy
 * may use for it (routing/remote-http-router.ts), and the choice is reserved here as any
 * placement is, under the per-worker limit.
 */

import { ProxyError } from "../errors.ts";
import type { Placement, PlacementRequest, RoutedPlacement } from "./placement.ts";
import type { RemoteHttpRouter } from "./remote-http-router.ts";

export async function placeRemotely(placement: Placement, remote: RemoteHttpRouter, request: PlacementRequest): Promise<RoutedPlacement> {
  const candidates = placement.candidatesFor(request);
  if (candidates.length === 0) throw new ProxyError("NO_WORKER", 503, `No ${request.role} worker is available`);
  const pick = await remote.ask(candidates, placement.routingFor(request.role, request.routing), {
    // A retried leg's router server is told the worker it failed on, else the paired leg's.
    exclude: request.avoid.at(-1) ?? request.exclude,
    signal: request.signal,
  });
  const placed = placement.reserveAgain(request.role, request.requestKey, pick.worker, request.routing);
  return {
    ...placed,
    matchedTokens: pick.matchedTokens,
    totalTokens: pick.totalTokens,
    ...(pick.routeHint === undefined ? {} : { routeHint: pick.routeHint }),
  };
}
