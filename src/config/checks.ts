/** What a loaded config must satisfy (a ConfigError stops start-up), and what start-up warns of. */

import { ConfigError } from "./errors.ts";
import type { TrtllmYaml } from "./trtllm-yaml.ts";
import type { ProxyConfig } from "./types.ts";

/** Throws the ConfigError of the first rule the config breaks. */
export function checkConfig(config: ProxyConfig, file: TrtllmYaml | undefined): void {
  requireWorkers(config, file);
  checkConditionalDisagg(config);
  checkSubagentAffinity(config);
  checkWorkerProtocol(config);
  checkCoordinatorUrl(config.disaggCoordinatorUrl);
}

/**
 * Forwarding a parent's routing key needs the key that signs it, so upstream refuses the
 * affinity configuration at start-up without one (docs/source/features/subagent-routing.md
 * @ 83dd989e). Its start-up check could not be read; the wording is its disagg_auth.py's for
 * the same condition (build_subagent_affinity_headers, read_file id 68525723387).
 */
function checkSubagentAffinity(config: ProxyConfig): void {
  if (config.subagentAffinityHeader !== undefined && config.internalAuthKey === undefined) {
    throw new ConfigError("Invalid config: Subagent affinity requires internal_request_auth_key");
  }
}

function checkConditionalDisagg(config: ProxyConfig): void {
  if (config.conditionalDisagg === undefined) return;
  if (config.generationRouter !== "kv_cache_aware" && config.generationRouter !== "conversation") {
    throw new ConfigError("Invalid config: conditional_disagg_config needs a generation router of type kv_cache_aware or conversation");
  }
}

/** "auto" or a release number as tensorrt_llm/version.py spells it (the table in workers/protocol.ts reads it). */
function checkWorkerProtocol(config: ProxyConfig): void {
  if (config.workerProtocol === "auto" || /^v?\d+\.\d+(\.\d+)?((\.)?rc\d+)?(\.post\d+)?$/.test(config.workerProtocol)) return;
  throw new ConfigError(
    `Invalid config: --worker-protocol must be auto or a TensorRT-LLM version such as 1.3.0rc18, not ${JSON.stringify(config.workerProtocol)}`,
  );
}

/** A coordinator is reached over HTTP(S) or a Unix socket (`unix:/abs/path.sock`, upstream's COORDINATOR_UDS_SCHEME). */
function checkCoordinatorUrl(url: string | undefined): void {
  if (url === undefined) return;
  if (url.startsWith("unix:/")) return;
  if (URL.canParse(url) && /^https?:$/.test(new URL(url).protocol)) return;
  throw new ConfigError(`Invalid config: disagg_coordinator_url must be an http(s):// URL or unix:/path.sock, not ${JSON.stringify(url)}`);
}

function requireWorkers(config: ProxyConfig, file: TrtllmYaml | undefined): void {
  // Discovered workers may register after start-up.
  if (config.discovery !== undefined) return;
  if (config.contextServers.length === 0 && !config.benchmarkGenerationOnly) {
    const hint = missingUrlsHint("context_servers", file?.instances.context, "--context URL");
    throw new ConfigError(`Invalid config: at least one context server is required (--context URL or context_servers.urls)${hint}`);
  }
  if (config.generationServers.length === 0) {
    const hint = missingUrlsHint("generation_servers", file?.instances.generation, "--generation URL");
    throw new ConfigError(
      `Invalid config: at least one generation server is required (--generation URL or generation_servers.urls)${hint}`,
    );
  }
}

/**
 * Upstream's files often give `num_instances` without `urls`: its MPI launcher or its service
 * discovery supplies the workers. Say what does it here.
 */
function missingUrlsHint(section: string, instances: number | undefined, flag: string): string {
  if (instances === 0 && section === "context_servers") {
    return "; context_servers.num_instances is 0: for generation-only benchmarking set TRTLLM_DISAGG_BENCHMARK_GEN_ONLY=1, as trtllm-serve expects";
  }
  if (instances === undefined) return "";
  return `; ${section}.num_instances is ${instances} but no urls are listed: this proxy launches no workers, so give their addresses (${flag}, repeatable, or ${section}.urls) or let them register (disagg_cluster, -m)`;
}

/**
 * Why several event loops cannot serve this configuration, if they cannot: what they share is
 * the load (reservations, round-robin turns, admission). The conversation map and the KV-block
 * index live in one loop's memory, and discovered workers and the HTTP cluster store arrive in
 * one loop; spreading requests over loops that each knew only their own would misroute them.
 */
export function oneLoopReason(config: ProxyConfig): string | undefined {
  if (config.numWorkers <= 1) return undefined;
  const stateful = (["contextRouter", "generationRouter"] as const)
    .map((key) => config[key])
    .find((router) => router === "conversation" || router === "kv_cache_aware");
  // With a coordinator the stateful routers' state lives there: every loop delegates to it.
  if (stateful !== undefined && config.disaggCoordinatorUrl === undefined)
    return `the ${stateful} router (its index lives in one event loop)`;
  if (config.discovery !== undefined) return "discovered workers (they register with one event loop)";
  return undefined;
}

export function warningsOf(file: TrtllmYaml | undefined, config: ProxyConfig, noRetry: boolean): string[] {
  const warnings: string[] = [...(file?.warnings ?? [])];
  if (file !== undefined && file.unknown.length > 0) {
    warnings.push(`Ignoring config keys neither this proxy nor TensorRT-LLM's workers know: ${file.unknown.join(", ")}`);
  }
  if (config.discovery?.kind === "metadata" && config.contextServers.length + config.generationServers.length > 0) {
    warnings.push("With a metadata server (-m) the static worker lists are used too: discovered workers join them");
  }
  const mismatch = clusterPortMismatch(config);
  if (mismatch !== undefined) warnings.push(mismatch);
  if (noRetry) warnings.push("Worker call retries are disabled by TRTLLM_DISAGG_NO_RETRY=1");
  return warnings;
}

/**
 * An http(s) cluster_uri tells workers where this proxy's cluster storage is; upstream serves
 * it on the proxy's own port whatever the URI says. A URI naming another port sends workers
 * elsewhere: say so (port 0 picks a port at start, so it cannot be compared).
 */
function clusterPortMismatch(config: ProxyConfig): string | undefined {
  const discovery = config.discovery;
  // With a coordinator the storage is the coordinator's (disagg-proxy coordinator listens on the URI's port).
  if (discovery?.kind !== "cluster" || discovery.storage !== "http" || config.port === 0 || config.disaggCoordinatorUrl !== undefined)
    return undefined;
  const uri = new URL(discovery.endpoint);
  const port = uri.port === "" ? (uri.protocol === "https:" ? 443 : 80) : Number(uri.port);
  if (port === config.port) return undefined;
  return `disagg_cluster.cluster_uri ${discovery.endpoint} names port ${port}, but this proxy serves its cluster storage on port ${config.port}: workers given that URI will not reach it`;
}
