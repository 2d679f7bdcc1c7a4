/**
 * A worker's side of `disagg_cluster`: its key under the cluster's workers prefix, held by a
 * lease with TTL inactive_timeout_sec and refreshed every heartbeat_interval_sec, as
 * TensorRT-LLM's DisaggClusterWorker does.
 */

import type { Logger } from "../observability/logger.ts";
import { ROLE_NUMBERS, workersPrefix } from "./cluster-discovery.ts";
import { EtcdClient } from "./etcd-client.ts";
import { LeaseKeeper } from "./lease-keeper.ts";
import type { ReconnectOptions, Role } from "./types.ts";

export interface RegisterWorkerOptions {
  endpoint: string;
  clusterName: string;
  role: Role;
  /** As the proxy should reach the worker (no brackets around an IPv6 literal). */
  host: string;
  port: number;
  /** heartbeat_interval_sec, in ms. */
  heartbeatMs: number;
  /** inactive_timeout_sec, in ms: the lease's TTL. */
  ttlMs: number;
  logger: Logger;
  reconnect?: ReconnectOptions;
}

export interface WorkerRegistration {
  readonly workerId: string;
  readonly key: string;
  /** Stops the heartbeat and deletes the key. */
  stop(): Promise<void>;
}

/** Upstream's worker_id: `<ROLE>-<host>:<port>-<epoch_ms>-<pid>-<3-digit random>`. */
export function workerIdOf(role: Role, host: string, port: number, now = Date.now(), pid = process.pid, random = Math.random()): string {
  const suffix = String(Math.floor(random * 1000)).padStart(3, "0");
  return `${role.toUpperCase()}-${host}:${port}-${now}-${pid}-${suffix}`;
}

/** Registers at once in the background; while etcd is unreachable it retries with backoff. */
export function registerWorker(options: RegisterWorkerOptions): WorkerRegistration {
  const client = new EtcdClient(options.endpoint);
  const workerId = workerIdOf(options.role, options.host, options.port);
  const key = `${workersPrefix(options.clusterName)}${workerId}`;
  const value = JSON.stringify({ worker_id: workerId, host: options.host, port: options.port, role: ROLE_NUMBERS[options.role] });
  const keeper = new LeaseKeeper({
    client,
    ttlMs: options.ttlMs,
    intervalMs: options.heartbeatMs,
    logger: options.logger,
    fields: { worker_id: workerId, key },
    attach: (lease) => client.put(key, value, lease),
    ...(options.reconnect === undefined ? {} : { reconnect: options.reconnect }),
  });
  return { workerId, key, stop: () => keeper.stop() };
}

/** The settings `--register` gives: everything but the worker's own address and role. */
export type EtcdRegistration = Omit<RegisterWorkerOptions, "role" | "host" | "port">;

/** Registers each worker (and role) it is handed: what main.ts injects into the emulated worker. */
export function etcdRegistrar(
  settings: EtcdRegistration,
): (worker: { readonly role: Role; readonly host: string; readonly port: number }) => WorkerRegistration {
  return (worker) => registerWorker({ ...settings, role: worker.role, host: worker.host, port: worker.port });
}
