import type { Role } from "../config/types.ts";
import type { DiscoveryStatus } from "../discovery/index.ts";
import type { JsonObject } from "../json.ts";
import type { Placement } from "../routing/placement.ts";

/** GET /cluster_info: server lists, readiness and in-flight load per worker, discovery's state. */
export function clusterInfoOf(placement: Placement, discovery: DiscoveryStatus | undefined): JsonObject {
  const { pool, table } = placement;
  const describe = (role: Role): JsonObject[] =>
    pool.all(role).map((w) => ({ url: w.origin, ready: w.ready, in_flight: table.load(role, w.origin) }));
  return {
    is_ready: pool.isReady(),
    server_lists: { context: pool.all("context").map((w) => w.origin), generation: pool.all("generation").map((w) => w.origin) },
    workers: { context: describe("context"), generation: describe("generation") },
    minimal_instances: { context_servers: pool.minimal.context, generation_servers: pool.minimal.generation },
    ...(discovery === undefined ? {} : { discovery: { ...discovery } }),
  };
}
