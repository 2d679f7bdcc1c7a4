import { isJsonObject, type JsonObject } from "../json/json.ts";
import type { Placed } from "../routing/placement.ts";

/**
 * A leg's body with the attention-DP rank its router chose, as upstream's RemoteHttpRouter puts
 * it (tensorrt_llm/serve/router.py, read_file id 56124310390): into `disaggregated_params`,
 * which a body without any gets as `{request_type: "context_only", route_hint}`.
 */
export function withRouteHint(body: JsonObject, placed: Placed): JsonObject {
  if (placed.routeHint === undefined) return body;
  const params = isJsonObject(body["disaggregated_params"]) ? body["disaggregated_params"] : { request_type: "context_only" };
  return { ...body, disaggregated_params: { ...params, route_hint: { dp_rank: placed.routeHint.dp_rank } } };
}

/** A worker reserved again for the same leg (a resend, a retry pinned to it) keeps the rank chosen for it. */
export function keepingRouteHint(again: Placed, before: Placed | undefined): Placed {
  return before?.routeHint === undefined || before.worker !== again.worker ? again : { ...again, routeHint: before.routeHint };
}
