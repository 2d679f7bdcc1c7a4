import type { DiscoveryConfig } from "../config/discovery-config.ts";
import { etcdClusterDiscovery, etcdMetadataDiscovery, type Discovery } from "../discovery/index.ts";
import type { Logger } from "../observability/logger.ts";
import type { WorkerPool } from "../workers/worker-pool.ts";

/**
 * Keeps the pool in step with etcd: a registered worker joins after its first healthy check,
 * a deregistered or expired one leaves rotation (its in-flight streams run to their end).
 * Listening never waits for etcd: the proxy answers /health 503 until enough workers are ready.
 */
export function startDiscovery(config: DiscoveryConfig, pool: WorkerPool, changed: () => void, logger: Logger): Discovery {
  const discovery =
    config.kind === "cluster"
      ? etcdClusterDiscovery({ endpoint: config.endpoint, clusterName: config.clusterName, logger })
      : etcdMetadataDiscovery({
          endpoint: config.endpoint,
          healthCheckTimeoutMs: config.healthCheckTimeoutMs,
          refreshIntervalMs: config.refreshIntervalMs,
          logger,
        });
  discovery
    .start((event) => {
      const touched = event.kind === "add" ? pool.add(event.role, event.origin) : pool.remove(event.role, event.origin);
      if (!touched) return;
      logger.info(event.kind === "add" ? "worker discovered" : "worker left", { role: event.role, worker: event.origin });
      changed();
    })
    .catch((error: unknown) => logger.error("discovery stopped", { error }));
  return discovery;
}
