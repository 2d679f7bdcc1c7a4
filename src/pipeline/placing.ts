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

export async function placeForRequest(deps: PipelineDeps, ctx: RequestContext, request: PlacementRequest): Promise<RoutedPlacement> {
  const started = performance.now();
  const placed = await placeLeg(deps.placement, request);
  if (ctx.ended) {
    placed.reservation.release();
    throw asProxyError(ctx.signal.reason);
  }
  if (placed.placedBy !== undefined) ctx.placedBy(request.role, placed.placedBy, performance.now() - started);
  return placed;
}
