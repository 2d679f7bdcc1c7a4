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
import { checkConfig, oneLoopReason, warningsOf } from "./checks.ts";
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
  checkConfig(config, file);
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
