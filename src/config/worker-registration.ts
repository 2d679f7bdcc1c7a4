/**
 * `disagg-proxy worker --register etcd://host:port` and its settings → how the worker registers
 * in etcd, as TensorRT-LLM's disagg_cluster workers do. main.ts hands the registration to the
 * emulator, which knows no registry itself.
 */

import type { WorkerFlags } from "./cli-options.ts";
import { UsageError } from "./errors.ts";
import { etcdEndpoint } from "./urls.ts";

export interface WorkerRegistrationSettings {
  /** `http://host:port` (comma list). */
  readonly endpoint: string;
  readonly clusterName: string;
  /** heartbeat_interval_sec, in ms. */
  readonly heartbeatMs: number;
  /** inactive_timeout_sec, in ms: the lease TTL. */
  readonly ttlMs: number;
}

/** disagg_cluster's defaults: heartbeat_interval_sec 5, inactive_timeout_sec 10. */
const DEFAULT_HEARTBEAT_MS = 5000;
const DEFAULT_TTL_MS = 10_000;
const REGISTER_KEYS = ["clusterName", "heartbeatMs", "ttlMs"] as const;
const REGISTER_FLAG_NAMES: Readonly<Record<(typeof REGISTER_KEYS)[number], string>> = {
  clusterName: "--cluster-name",
  heartbeatMs: "--heartbeat-interval",
  ttlMs: "--inactive-timeout",
};

/** Undefined without --register; its settings without it are a usage error. */
export function workerRegistration(flags: WorkerFlags): WorkerRegistrationSettings | undefined {
  const uri = flags.register;
  if (uri === undefined) {
    const stray = REGISTER_KEYS.find((key) => flags[key] !== undefined);
    if (stray !== undefined) throw new UsageError(`${REGISTER_FLAG_NAMES[stray]} needs --register`);
    return undefined;
  }
  // Only etcd: an http(s) cluster_uri is the proxy's own key-value store, which this proxy does not serve.
  const isEtcd = uri.split(",").every((item) => /^etcd:\/\//i.test(item.trim()) || item.trim() === "");
  const endpoint = isEtcd ? etcdEndpoint(uri) : undefined;
  if (endpoint === undefined) throw new UsageError(`Invalid value for --register: "${uri}" (expected etcd://host:port)`);
  return {
    endpoint,
    clusterName: flags.clusterName ?? "",
    heartbeatMs: flags.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    ttlMs: flags.ttlMs ?? DEFAULT_TTL_MS,
  };
}
