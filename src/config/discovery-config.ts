/**
 * Worker discovery in TensorRT-LLM's forms (reference §1.7.2–1.7.3): `disagg_cluster:` in
 * disagg_config.yaml (etcd, or the proxy's own HTTP cluster storage), or a separate
 * metadata_config.yaml (`-m`, etcd).
 */

import { etcdEndpoint } from "./urls.ts";
import { ConfigError, invalidConfig } from "./errors.ts";
import { isMapping, type Mapping } from "./yaml-values.ts";

export type DiscoveryConfig =
  | {
      readonly kind: "cluster";
      /**
       * etcd (`etcd://`), or the proxy's own HTTP cluster storage (`http(s)://`, which upstream's
       * proxy serves on its own port: tensorrt_llm/serve/cluster_storage.py @ 057d4a79).
       */
      readonly storage: "etcd" | "http";
      /** etcd: its client URL `http://host:port` (comma list); http: the cluster_uri as written. */
      readonly endpoint: string;
      readonly clusterName: string;
      readonly minimalContext: number;
      readonly minimalGeneration: number;
      /** inactive_timeout_sec: the lease of a node id this proxy claims. */
      readonly leaseTtlMs: number;
    }
  | {
      readonly kind: "metadata";
      readonly endpoint: string;
      readonly healthCheckTimeoutMs: number;
      readonly refreshIntervalMs: number;
    };

const CLUSTER_KEYS = new Set(["cluster_uri", "cluster_name", "minimal_instances", "heartbeat_interval_sec", "inactive_timeout_sec"]);
const METADATA_KEYS = new Set(["server_type", "hostname", "port", "health_check_timeout", "refresh_interval", "refersh_interval"]);

/** `disagg_cluster:` — unknown keys are refused, as upstream refuses them. */
export function clusterDiscovery(value: unknown): DiscoveryConfig {
  const section = mapping(value, "disagg_cluster");
  for (const key of Object.keys(section))
    if (!CLUSTER_KEYS.has(key)) throw invalidConfig(`disagg_cluster.${key}`, "one of " + [...CLUSTER_KEYS].join(", "));
  const uri = section["cluster_uri"];
  const expectation = "an etcd://host:port or http(s)://host:port URI";
  if (typeof uri !== "string") throw invalidConfig("disagg_cluster.cluster_uri", expectation);
  const http = /^https?:\/\//i.test(uri);
  if (http && !URL.canParse(uri)) throw invalidConfig("disagg_cluster.cluster_uri", expectation);
  const endpoint = http ? uri : etcdEndpoint(uri);
  if (endpoint === undefined) throw invalidConfig("disagg_cluster.cluster_uri", expectation);
  const minimal =
    section["minimal_instances"] === undefined ? {} : mapping(section["minimal_instances"], "disagg_cluster.minimal_instances");
  return {
    kind: "cluster",
    storage: http ? "http" : "etcd",
    endpoint,
    clusterName: optionalString(section["cluster_name"], "disagg_cluster.cluster_name") ?? "",
    minimalContext: count(minimal["context_servers"], "disagg_cluster.minimal_instances.context_servers", 1),
    minimalGeneration: count(minimal["generation_servers"], "disagg_cluster.minimal_instances.generation_servers", 1),
    leaseTtlMs: seconds(section["inactive_timeout_sec"], "disagg_cluster.inactive_timeout_sec", 10) * 1000,
  };
}

/** metadata_config.yaml (`-m`): server_type etcd, hostname, port, health_check_timeout, refresh_interval. */
export function metadataDiscovery(text: string, fileName: string, warn: (text: string) => void = () => {}): DiscoveryConfig {
  let doc: unknown;
  try {
    doc = Bun.YAML.parse(text);
  } catch (error) {
    throw new ConfigError(`Invalid config: ${fileName} is not valid YAML: ${error instanceof Error ? error.message : String(error)}`);
  }
  const section = mapping(doc ?? {}, fileName);
  for (const key of Object.keys(section))
    if (!METADATA_KEYS.has(key)) throw invalidConfig(`${fileName}: ${key}`, "one of " + [...METADATA_KEYS].join(", "));
  const type = section["server_type"] ?? "etcd";
  if (type !== "etcd") throw invalidConfig(`${fileName}: server_type`, '"etcd"');
  const host = optionalString(section["hostname"], `${fileName}: hostname`) ?? "localhost";
  const port = count(section["port"], `${fileName}: port`, 2379);
  // Upstream's own example spells it refersh_interval, which its MetadataServerConfig refuses
  // (tensorrt_llm/llmapi/disagg_utils.py): taken here, and said, so the typo is not silent.
  const refresh = section["refresh_interval"] ?? section["refersh_interval"];
  if (section["refersh_interval"] !== undefined)
    warn(`${fileName}: refersh_interval is read as refresh_interval (trtllm-serve refuses this spelling: write refresh_interval)`);
  return {
    kind: "metadata",
    endpoint: etcdEndpoint(`${host}:${port}`) ?? `http://${host}:${port}`,
    healthCheckTimeoutMs: seconds(section["health_check_timeout"], `${fileName}: health_check_timeout`, 5) * 1000,
    refreshIntervalMs: seconds(refresh, `${fileName}: refresh_interval`, 10) * 1000,
  };
}

function mapping(value: unknown, key: string): Mapping {
  if (!isMapping(value)) throw invalidConfig(key, "a mapping");
  return value;
}

function optionalString(value: unknown, key: string): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string") throw invalidConfig(key, "a string");
  return value;
}

function count(value: unknown, key: string, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "number" || !Number.isInteger(value) || value < 0) throw invalidConfig(key, "a whole number ≥ 0");
  return value;
}

function seconds(value: unknown, key: string, fallback: number): number {
  if (value === undefined || value === null) return fallback;
  if (typeof value !== "number" || !(value > 0)) throw invalidConfig(key, "a number of seconds > 0");
  return value;
}
