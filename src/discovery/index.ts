/**
 * Worker discovery through etcd, in TensorRT-LLM's two layouts, over etcd's v3 JSON gateway:
 *
 * - `etcdClusterDiscovery`: `disagg_cluster` (workers keep leased keys under
 *   `/trtllm-disagg/<cluster_name>/workers/`), read then watched;
 * - `etcdMetadataDiscovery`: the metadata server (`-m`; keys `trtllm/<name>`), polled with
 *   health checks;
 * - `registerWorker`: a worker's own registration in the `disagg_cluster` layout;
 * - `claimNodeId`: a node id (0..255) no other proxy replica of the cluster holds.
 *
 * While etcd is unreachable the last known workers are kept (no remove events) and every
 * loop retries with backoff.
 */

export { etcdClusterDiscovery, workersPrefix, type ClusterDiscoveryOptions } from "./cluster-discovery.ts";
export { ClusterStore, StoreFullError, STORE_LIMITS, type HandedItem, type SetRequest, type StorageItem } from "./cluster-store.ts";
export { httpClusterDiscovery, type HttpClusterDiscovery } from "./http-cluster-discovery.ts";
export { httpRegistrar, registerOverHttp, type HttpRegistration } from "./http-register-worker.ts";
export { EtcdError } from "./etcd-client.ts";
export { etcdMetadataDiscovery, METADATA_PREFIX, type MetadataDiscoveryOptions } from "./metadata-discovery.ts";
export { claimNodeId, nodeIdKey, type ClaimNodeIdOptions, type NodeIdClaim } from "./node-id.ts";
export {
  etcdRegistrar,
  registerWorker,
  workerIdOf,
  type EtcdRegistration,
  type RegisterWorkerOptions,
  type WorkerRegistration,
} from "./register-worker.ts";
export type { Discovery, DiscoveryEvent, DiscoveryStatus, ReconnectOptions, RegisteredWorker, Role } from "./types.ts";
