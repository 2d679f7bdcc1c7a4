/**
 * Flags + disagg_config.yaml + environment → the one frozen ProxyConfig.
 * Precedence: DEFAULTS < YAML < flags; TRTLLM_DISAGG_NO_RETRY=1 wins over both.
 * Pure given its dependencies, so tests need neither files nor a real environment.
 */

import { readFileSync } from "node:fs";
import type { ServeFlags } from "./cli-options.ts";
import { metadataDiscovery, type DiscoveryConfig } from "./discovery-config.ts";
import { ConfigError } from "./errors.ts";
import { parseNetwork } from "../security/networks.ts";
import { mergedAliases, modelAliasOf } from "./model-aliases.ts";
import { hostNodeId } from "./node-id.ts";
import { parseTrtllmYaml, type TrtllmYaml } from "./trtllm-yaml.ts";
import { DEFAULTS, type ProxyConfig, type Role, type RouterOptions } from "./types.ts";

export interface LoadDeps {
  /** Synchronous, because the config is read once, before anything else starts. */
  readonly readFile: (path: string) => string;
  readonly env: Readonly<Record<string, string | undefined>>;
  /** Only called when neither the YAML nor the flags set node_id. */
  readonly defaultNodeId: () => number;
}

/** A start-up line below warning level: what the configuration means here, said once. */
export interface StartupNote {
  readonly level: "debug" | "info";
  readonly text: string;
}

export interface LoadedConfig {
  readonly config: ProxyConfig;
  /** Complete log lines for the caller to write at warn level, once, at start-up: only what changes behaviour. */
  readonly warnings: string[];
  readonly notes: StartupNote[];
}

export function systemLoadDeps(): LoadDeps {
  return {
    readFile: (path) => readFileSync(path, "utf8"),
    env: process.env,
    defaultNodeId: hostNodeId,
  };
}

export function loadConfig(flags: ServeFlags, deps: LoadDeps): LoadedConfig {
  const metadataWarnings: string[] = [];
  const file = flags.configFile === undefined ? undefined : readConfigFile(flags.configFile, deps);
  const noRetry = deps.env["TRTLLM_DISAGG_NO_RETRY"] === "1";
  const config: ProxyConfig = {
    ...DEFAULTS,
    ...file?.settings,
    ...flags,
    contextServers: flags.contextServers ?? file?.settings.contextServers ?? [],
    generationServers: flags.generationServers ?? file?.settings.generationServers ?? [],
    nodeId: flags.nodeId ?? file?.settings.nodeId ?? deps.defaultNodeId(),
    maxRetries: noRetry ? 0 : (flags.maxRetries ?? file?.settings.maxRetries ?? DEFAULTS.maxRetries),
    configFile: flags.configFile,
    tlsCertFile: flags.tlsCertFile,
    tlsKeyFile: flags.tlsKeyFile,
    workerCaFile: flags.workerCaFile,
    workerApiKey: flags.workerApiKey,
    apiKeyFile: flags.apiKeyFile,
    protectMetrics: flags.protectMetrics ?? false,
    dashboard: !(flags.noDashboard ?? false),
    workerMsgpack: flags.workerMsgpack ?? false,
    apiKeysFromEnv: deps.env["DISAGG_PROXY_API_KEYS"],
    benchmarkGenerationOnly: deps.env["TRTLLM_DISAGG_BENCHMARK_GEN_ONLY"] === "1",
    // Read when the server is built, as upstream's request_trace_dir_from_env; empty is unset.
    requestTraceDir: deps.env["TRTLLM_REQUEST_TRACE_DIR"] || undefined,
    processId: envInteger(deps.env, "TRTLLM_DISAGG_WORKER_PROCESS_ID", 0, 63) ?? 0,
    routerOptions: withEnvBlockSize(flags, file, deps),
    discovery: discoveryOf(flags.metadataConfigFile, file?.settings.discovery, deps, (text) => metadataWarnings.push(text)),
    claimNodeId:
      flags.nodeId === undefined &&
      file?.settings.nodeId === undefined &&
      file?.settings.discovery?.kind === "cluster" &&
      file.settings.discovery.storage === "etcd",
    internalAuthKey: internalAuthKey(flags.internalAuthKeyFile, file?.settings.internalAuthKey, deps),
    reportAddrFile: flags.reportAddrFile,
    takeOver: flags.takeOver ?? false,
    runtimeDir: flags.runtimeDir,
    clusterAllowFrom: (flags.clusterAllowFrom ?? file?.settings.clusterAllowFrom ?? []).map((text) =>
      allowedNetwork(text, "cluster allow-from"),
    ),
    trustedProxies: (flags.trustedProxies ?? []).map((text) => allowedNetwork(text, "--trusted-proxy")),
    clusterKey: clusterKey(flags.clusterKeyFile, deps),
    modelAliases: mergedAliases(
      (flags.modelAlias ?? []).map((text) => modelAliasOf(text)),
      file?.settings.modelAliases ?? [],
    ),
  };
  if ((config.tlsCertFile === undefined) !== (config.tlsKeyFile === undefined)) {
    throw new ConfigError("Invalid config: --tls-cert and --tls-key go together");
  }
  requireWorkers(config, file);
  checkConditionalDisagg(config);
  checkSubagentAffinity(config);
  checkWorkerProtocol(config);
  checkCoordinatorUrl(config.disaggCoordinatorUrl);
  const loops = oneLoopReason(config);
  const served = loops === undefined ? config : { ...config, numWorkers: 1 };
  const warnings = [...warningsOf(file, served, noRetry), ...metadataWarnings];
  if (loops !== undefined) warnings.push(`num_workers: ${config.numWorkers} is not honoured with ${loops}: one event loop serves the port`);
  return { config: freeze(served), warnings, notes: notesOf(file) };
}

function readConfigFile(path: string, deps: LoadDeps): TrtllmYaml {
  return parseTrtllmYaml(readNamedFile(path, deps), path);
}

/** A file the configuration names; one that cannot be read stops start-up naming it. */
function readNamedFile(path: string, deps: LoadDeps): string {
  try {
    return deps.readFile(path);
  } catch (error) {
    throw new ConfigError(`Invalid config: cannot read ${path}: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** An integer environment variable in [min, max]; anything else stops start-up naming it. */
function envInteger(env: LoadDeps["env"], name: string, min: number, max: number): number | undefined {
  const raw = env[name];
  if (raw === undefined || raw === "") return undefined;
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max)
    throw new ConfigError(`Invalid config: ${name} must be an integer from ${min} to ${max}, not ${JSON.stringify(raw)}`);
  return value;
}

/** TRTLLM_KVCACHE_AWARE_ROUTER_HASH_TOKENS_PER_BLOCK: a kv_cache_aware router's block size unless its router block sets one. */
function withEnvBlockSize(flags: ServeFlags, file: TrtllmYaml | undefined, deps: LoadDeps): ProxyConfig["routerOptions"] {
  const options: ProxyConfig["routerOptions"] = file?.settings.routerOptions ?? DEFAULTS.routerOptions;
  const size = envInteger(deps.env, "TRTLLM_KVCACHE_AWARE_ROUTER_HASH_TOKENS_PER_BLOCK", 1, 1 << 20);
  if (size === undefined) return options;
  const apply = (role: Role, type: string | undefined): RouterOptions =>
    type === "kv_cache_aware" && options[role].tokensPerBlock === undefined ? { ...options[role], tokensPerBlock: size } : options[role];
  return {
    context: apply("context", flags.contextRouter ?? file?.settings.contextRouter),
    generation: apply("generation", flags.generationRouter ?? file?.settings.generationRouter),
  };
}

function discoveryOf(
  metadataFile: string | undefined,
  fromYaml: DiscoveryConfig | undefined,
  deps: LoadDeps,
  warn: (text: string) => void,
): DiscoveryConfig | undefined {
  if (metadataFile === undefined) return fromYaml;
  if (fromYaml !== undefined) throw new ConfigError("Invalid config: disagg_cluster and a metadata server (-m) cannot be combined");
  return metadataDiscovery(readNamedFile(metadataFile, deps), metadataFile, warn);
}

function internalAuthKey(keyFile: string | undefined, fromYaml: string | undefined, deps: LoadDeps): string | undefined {
  if (keyFile === undefined) return fromYaml;
  const key = readNamedFile(keyFile, deps).trim();
  if (key === "") throw new ConfigError(`Invalid config: ${keyFile} holds no internal auth key`);
  return key;
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
function oneLoopReason(config: ProxyConfig): string | undefined {
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

function warningsOf(file: TrtllmYaml | undefined, config: ProxyConfig, noRetry: boolean): string[] {
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

function notesOf(file: TrtllmYaml | undefined): StartupNote[] {
  if (file === undefined || file.workerKeys.length === 0) return [];
  return [
    {
      level: "debug",
      text: `Worker settings in the config file, for the workers and not the proxy (as trtllm-serve's proxy ignores them): ${file.workerKeys.join(", ")}`,
    },
  ];
}

/** A network entry (--cluster-allow-from / cluster_allow_from, --trusted-proxy); one that is no network stops start-up naming it. */
function allowedNetwork(text: string, what: string): string {
  const parsed = parseNetwork(text);
  if (parsed === undefined)
    throw new ConfigError(`Invalid config: ${what} ${JSON.stringify(text)} is not a network (e.g. 10.0.0.0/8 or fd00::/8)`);
  return parsed.text;
}

function clusterKey(keyFile: string | undefined, deps: LoadDeps): string | undefined {
  if (keyFile === undefined) return undefined;
  const key = readNamedFile(keyFile, deps).trim();
  if (key === "") throw new ConfigError(`Invalid config: ${keyFile} holds no cluster key`);
  return key;
}

function freeze(config: ProxyConfig): ProxyConfig {
  return Object.freeze({
    ...config,
    contextServers: Object.freeze([...config.contextServers]),
    generationServers: Object.freeze([...config.generationServers]),
  });
}
