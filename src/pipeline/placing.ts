/**
 * A leg's placement for a request: the routers' or the coordinator's (routing/coordinated-placement.ts),
 * which may take a network round trip. A request that ended meanwhile gets nothing: what was
 * placed for it is released at once (its one /finish with it), as its end released the rest.
 */

import { asProxyError } from "../errors.ts";
import type { RequestContext } from "../request/context.ts";
import { placeLeg } from "../routing/coordinated-placement.ts";
import type { PlacementRequest, RoutedPlacement } from "../routing/placement.ts";
import type { PipelineDeps } from "./types.ts";

export function placeForRequest(
  deps: PipelineDeps,
  ctx: RequestContext,
  request: PlacementRequest,
): RoutedPlacement | Promise<RoutedPlacement> {
  const started = performance.now();
  const placing = placeLeg(deps.placement, request);
  // A placement made here and now (no coordinator asked) is kept in the same turn: no promise for it.
  return placing instanceof Promise ? placing.then((placed) => kept(ctx, request, placed, started)) : kept(ctx, request, placing, started);
}

function kept(ctx: RequestContext, request: PlacementRequest, placed: RoutedPlacement, started: number): RoutedPlacement {
  if (ctx.ended) {
    placed.reservation.release();
    throw asProxyError(ctx.signal.reason);
  }
  if (placed.placedBy !== undefined) ctx.placedBy(request.role, placed.placedBy, performance.now() - started);
  return placed;
}
