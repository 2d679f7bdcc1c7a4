import type { DiscoveryConfig } from "../config/discovery-config.ts";
import {
  etcdClusterDiscovery,
  etcdMetadataDiscovery,
  httpClusterDiscovery,
  type ClusterStore,
  type Discovery,
  type RegisteredWorker,
} from "../discovery/index.ts";
import type { Logger } from "../observability/logger.ts";
import { workerAddressRefusal, type WorkerAddressRules } from "../security/worker-address.ts";
import type { WorkerPool } from "../workers/worker-pool.ts";
import { coordinatorListDiscovery, type CoordinatorListSettings } from "./coordinator-lists.ts";

/** A started discovery: its connection state, and disagg_cluster's registered workers (upstream's current_workers). */
export type RunningDiscovery = Discovery & { registered?(): RegisteredWorker[] };

/**
 * Keeps the pool in step with etcd or the proxy's own cluster storage: a registered worker
 * joins after its first healthy check, a deregistered or expired one leaves rotation (its
 * in-flight streams run to their end). Listening never waits for discovery: the proxy answers
 * /health 503 until enough workers are ready. A registration naming a link-local or metadata
 * address, or the proxy itself, never joins (security/worker-address.ts).
 */
export function startDiscovery(
  config: DiscoveryConfig,
  store: ClusterStore | undefined,
  pool: WorkerPool,
  changed: () => void,
  logger: Logger,
  addressRules: WorkerAddressRules,
  coordinator?: CoordinatorListSettings,
): RunningDiscovery {
  // A replica whose coordinator owns the HTTP cluster storage lists what the coordinator lists.
  const ownedByCoordinator = config.kind === "cluster" && config.storage === "http" && coordinator !== undefined;
  const discovery = ownedByCoordinator ? coordinatorListDiscovery(coordinator) : discoveryOf(config, store, logger);
  discovery
    .start((event) => {
      const refusal = event.kind === "add" ? workerAddressRefusal(event.origin, addressRules) : undefined;
      if (refusal !== undefined) {
        logger.warn("discovered worker refused", { role: event.role, worker: event.origin, reason: refusal });
        return;
      }
      const touched = event.kind === "add" ? pool.add(event.role, event.origin, event.version) : pool.remove(event.role, event.origin);
      if (!touched) return;
      logger.info(event.kind === "add" ? "worker discovered" : "worker left", { role: event.role, worker: event.origin });
      changed();
    })
    .catch((error: unknown) => logger.error("discovery stopped", { error }));
  return discovery;
}

function discoveryOf(config: DiscoveryConfig, store: ClusterStore | undefined, logger: Logger): RunningDiscovery {
  if (config.kind === "metadata") {
    return etcdMetadataDiscovery({
      endpoint: config.endpoint,
      healthCheckTimeoutMs: config.healthCheckTimeoutMs,
      refreshIntervalMs: config.refreshIntervalMs,
      logger,
    });
  }
  if (config.storage === "etcd") return etcdClusterDiscovery({ endpoint: config.endpoint, clusterName: config.clusterName, logger });
  if (store === undefined) throw new Error("an http(s) cluster_uri needs the proxy's cluster storage");
  return httpClusterDiscovery({ store, clusterName: config.clusterName, logger });
}
