/**
 * `disagg-proxy worker --register etcd://host:port | http://proxy:port` and its settings → how
 * the worker registers, in etcd or a proxy's HTTP cluster storage, as TensorRT-LLM's
 * disagg_cluster workers do. main.ts hands the registration to the
 * emulator, which knows no registry itself.
 */

import type { WorkerFlags } from "./cli-options.ts";
import { readFileSync } from "node:fs";
import { ConfigError, UsageError } from "./errors.ts";
import { etcdEndpoint } from "./urls.ts";

export interface WorkerRegistrationSettings {
  /** etcd (`etcd://`), or a proxy's HTTP cluster storage (`http(s)://`). */
  readonly storage: "etcd" | "http";
  /** etcd: `http://host:port` (comma list); http: the cluster URI as given. */
  readonly endpoint: string;
  /** http: the Bearer key read from --cluster-key-file. */
  readonly key: string | undefined;
  readonly clusterName: string;
  /** heartbeat_interval_sec, in ms. */
  readonly heartbeatMs: number;
  /** inactive_timeout_sec, in ms: the lease TTL. */
  readonly ttlMs: number;
}

/** disagg_cluster's defaults: heartbeat_interval_sec 5, inactive_timeout_sec 10. */
const DEFAULT_HEARTBEAT_MS = 5000;
const DEFAULT_TTL_MS = 10_000;
const REGISTER_KEYS = ["clusterName", "heartbeatMs", "ttlMs", "clusterKeyFile"] as const;
const REGISTER_FLAG_NAMES: Readonly<Record<(typeof REGISTER_KEYS)[number], string>> = {
  clusterKeyFile: "--cluster-key-file",
  clusterName: "--cluster-name",
  heartbeatMs: "--heartbeat-interval",
  ttlMs: "--inactive-timeout",
};

/** Undefined without --register; its settings without it are a usage error. */
export function workerRegistration(
  flags: WorkerFlags,
  readFile: (path: string) => string = (path) => readFileSync(path, "utf8"),
): WorkerRegistrationSettings | undefined {
  const uri = flags.register;
  if (uri === undefined) {
    const stray = REGISTER_KEYS.find((key) => flags[key] !== undefined);
    if (stray !== undefined) throw new UsageError(`${REGISTER_FLAG_NAMES[stray]} needs --register`);
    return undefined;
  }
  const common = {
    clusterName: flags.clusterName ?? "",
    heartbeatMs: flags.heartbeatMs ?? DEFAULT_HEARTBEAT_MS,
    ttlMs: flags.ttlMs ?? DEFAULT_TTL_MS,
  };
  // http(s): a proxy's own cluster storage (trtllm-serve serve --disagg_cluster_uri http://…).
  if (/^https?:\/\//i.test(uri)) {
    if (!URL.canParse(uri)) throw new UsageError(`Invalid value for --register: "${uri}" (expected http://host:port)`);
    return { storage: "http", endpoint: uri, key: clusterKey(flags.clusterKeyFile, readFile), ...common };
  }
  if (flags.clusterKeyFile !== undefined) throw new UsageError("--cluster-key-file needs --register http(s)://…");
  const isEtcd = uri.split(",").every((item) => /^etcd:\/\//i.test(item.trim()) || item.trim() === "");
  const endpoint = isEtcd ? etcdEndpoint(uri) : undefined;
  if (endpoint === undefined)
    throw new UsageError(`Invalid value for --register: "${uri}" (expected etcd://host:port or http://host:port)`);
  return {
    storage: "etcd",
    key: undefined,
    endpoint,
    ...common,
  };
}

function clusterKey(file: string | undefined, readFile: (path: string) => string): string | undefined {
  if (file === undefined) return undefined;
  let key: string;
  try {
    key = readFile(file).trim();
  } catch (error) {
    throw new ConfigError(`Invalid config: cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (key === "") throw new ConfigError(`Invalid config: ${file} holds no cluster key`);
  return key;
}
