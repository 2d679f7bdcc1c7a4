/**
 * The YAML keys beyond the worker lists and routers: upstream's internal_request_auth_key,
 * disagg_cluster, conditional_disagg_config and the sub-agent affinity keys, and our own settings under the names of
 * their flags.
 */

import { clusterDiscovery } from "./discovery-config.ts";
import { invalidConfig } from "./errors.ts";
import type { ProxyConfig } from "./types.ts";
import { modelAliasesOf } from "./model-aliases.ts";
import { isMapping, optBoolean, optChoice, optInt, optPositive, optString, type Mapping } from "./yaml-values.ts";

export type ExtraSettings = Partial<
  Pick<
    ProxyConfig,
    | "healthCheckIntervalMs"
    | "healthCheckTimeoutMs"
    | "healthCheckFailures"
    | "healthCheckSuccesses"
    | "drainTimeoutMs"
    | "internalAuthKey"
    | "discovery"
    | "conditionalDisagg"
    | "allowRequestChatTemplate"
    | "genStripMessageHistory"
    | "genTokidsCtxbytes"
    | "serverKeepAliveTimeoutS"
    | "returnPerfMetrics"
    | "perfMetricsOutputDir"
    | "perfMetricsMaxRequests"
    | "otlpTracesEndpoint"
    | "clusterAllowFrom"
    | "modelAliases"
    | "subagentAffinityHeader"
    | "subagentAffinityScope"
    | "workerLoadIntervalMs"
    | "maxWorkerQueue"
    | "disaggCoordinatorUrl"
  >
>;

export const EXTRA_KEYS: readonly string[] = [
  "health_check_interval_ms",
  "health_check_timeout_ms",
  "health_check_failures",
  "health_check_successes",
  "drain_timeout",
  "internal_request_auth_key",
  "disagg_cluster",
  "conditional_disagg_config",
  "allow_request_chat_template",
  "gen_strip_message_history",
  "gen_tokids_ctxbytes",
  "server_keep_alive_timeout",
  "disagg_coordinator_url",
  "return_perf_metrics",
  "perf_metrics_output_dir",
  "perf_metrics_max_requests",
  "otlp_config",
  "cluster_allow_from",
  "model_aliases",
  "conversation_affinity_header_for_subagents",
  "subagent_affinity_scope",
  "worker_load_interval_ms",
  "max_worker_queue",
];

export function readExtras(doc: Mapping): ExtraSettings {
  const settings: Record<string, unknown> = {
    healthCheckIntervalMs: optInt(doc, "health_check_interval_ms", "health_check_interval_ms", 1),
    healthCheckTimeoutMs: optInt(doc, "health_check_timeout_ms", "health_check_timeout_ms", 1),
    healthCheckFailures: optInt(doc, "health_check_failures", "health_check_failures", 1),
    healthCheckSuccesses: optInt(doc, "health_check_successes", "health_check_successes", 1),
    internalAuthKey: optString(doc, "internal_request_auth_key", "internal_request_auth_key"),
    allowRequestChatTemplate: optBoolean(doc, "allow_request_chat_template", "allow_request_chat_template"),
    genStripMessageHistory: optBoolean(doc, "gen_strip_message_history", "gen_strip_message_history"),
    genTokidsCtxbytes: optBoolean(doc, "gen_tokids_ctxbytes", "gen_tokids_ctxbytes"),
    serverKeepAliveTimeoutS: optPositive(doc, "server_keep_alive_timeout", "server_keep_alive_timeout"),
    returnPerfMetrics: optBoolean(doc, "return_perf_metrics", "return_perf_metrics"),
    perfMetricsOutputDir: optString(doc, "perf_metrics_output_dir", "perf_metrics_output_dir"),
    perfMetricsMaxRequests: optInt(doc, "perf_metrics_max_requests", "perf_metrics_max_requests", 0),
    otlpTracesEndpoint: otlpEndpoint(doc["otlp_config"]),
    clusterAllowFrom: networkList(doc["cluster_allow_from"]),
    modelAliases: modelAliasesOf(doc["model_aliases"]),
    subagentAffinityHeader: optString(
      doc,
      "conversation_affinity_header_for_subagents",
      "conversation_affinity_header_for_subagents",
    )?.trim(),
    subagentAffinityScope: optChoice(doc, "subagent_affinity_scope", "subagent_affinity_scope", ["context", "both"] as const),
    workerLoadIntervalMs: optInt(doc, "worker_load_interval_ms", "worker_load_interval_ms", 0),
    maxWorkerQueue: optInt(doc, "max_worker_queue", "max_worker_queue", 0),
    disaggCoordinatorUrl: optString(doc, "disagg_coordinator_url", "disagg_coordinator_url"),
  };
  const drain = optInt(doc, "drain_timeout", "drain_timeout", 0);
  if (drain !== undefined) settings["drainTimeoutMs"] = drain * 1000;
  if (doc["disagg_cluster"] !== undefined && doc["disagg_cluster"] !== null)
    settings["discovery"] = clusterDiscovery(doc["disagg_cluster"]);
  const conditional = doc["conditional_disagg_config"];
  if (conditional !== undefined && conditional !== null) {
    if (!isMapping(conditional)) throw invalidConfig("conditional_disagg_config", "a mapping (max_local_prefill_length)");
    const max = optInt(conditional, "max_local_prefill_length", "conditional_disagg_config.max_local_prefill_length", 0) ?? 0;
    settings["conditionalDisagg"] = { maxLocalPrefillLength: max };
  }
  return Object.fromEntries(Object.entries(settings).filter(([, value]) => value !== undefined)) as ExtraSettings;
}

/** cluster_allow_from: a CIDR or a list of them (checked where the store starts). */
function networkList(value: unknown): string[] | undefined {
  if (value === undefined || value === null) return undefined;
  const items = Array.isArray(value) ? value : [value];
  if (!items.every((item): item is string => typeof item === "string"))
    throw invalidConfig("cluster_allow_from", "a CIDR string or a list of them");
  return items
    .flatMap((item) => item.split(","))
    .map((item) => item.trim())
    .filter((item) => item !== "");
}

/** otlp_config: { otlp_traces_endpoint: URL } (other keys of the block configure nothing here). */
function otlpEndpoint(block: unknown): string | undefined {
  if (block === undefined || block === null) return undefined;
  if (!isMapping(block)) throw invalidConfig("otlp_config", "a mapping (otlp_traces_endpoint)");
  const endpoint = optString(block, "otlp_traces_endpoint", "otlp_config.otlp_traces_endpoint");
  if (endpoint === undefined) return undefined;
  if (!URL.canParse(endpoint) || !/^https?:$/.test(new URL(endpoint).protocol)) {
    throw invalidConfig("otlp_config.otlp_traces_endpoint", `an http(s):// URL, not ${JSON.stringify(endpoint)}`);
  }
  return endpoint;
}
