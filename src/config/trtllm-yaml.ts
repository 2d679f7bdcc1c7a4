/**
 * Reader for TensorRT-LLM's disagg_config.yaml (`trtllm-serve disaggregated -c`). It takes
 * the keys the proxy implements, rejects wrong types with a ConfigError naming the key, and
 * lists every other key so start-up can warn once instead of failing on a file that works
 * with trtllm-serve (where `backend`, `model`, parallel sizes, … configure the workers).
 */

import { invalidConfig, ConfigError } from "./errors.ts";
import type { ProxyConfig, RouterType } from "./types.ts";
import { normaliseUrl } from "./urls.ts";

type YamlKey =
  | "host"
  | "port"
  | "maxRetries"
  | "schedule"
  | "nodeId"
  | "contextServers"
  | "generationServers"
  | "contextRouter"
  | "generationRouter"
  | "healthCheckIntervalMs"
  | "healthCheckTimeoutMs"
  | "healthCheckFailures"
  | "healthCheckSuccesses"
  | "drainTimeoutMs";

export type YamlSettings = { -readonly [K in YamlKey]?: ProxyConfig[K] };

export interface TrtllmYaml {
  readonly settings: YamlSettings;
  /** Dotted paths of the keys present but not implemented, e.g. `context_servers.kv_cache_config`. */
  readonly unimplemented: readonly string[];
}

type Mapping = Record<string, unknown>;

const TOP_LEVEL = new Set([
  "hostname",
  "port",
  "max_retries",
  "schedule_style",
  "node_id",
  "context_servers",
  "generation_servers",
  // Ours: settings trtllm-serve does not have, under the names of their flags.
  "health_check_interval_ms",
  "health_check_timeout_ms",
  "health_check_failures",
  "health_check_successes",
  "drain_timeout",
]);
const SECTION = new Set(["num_instances", "urls", "router"]);
const ROUTERS: readonly RouterType[] = ["round_robin", "load_balancing"];
/** Router types trtllm-serve has and this proxy does not: a clearer error than "unknown". */
const UNSUPPORTED_ROUTERS = new Set(["kv_cache_aware", "conversation"]);

export function parseTrtllmYaml(text: string, fileName: string): TrtllmYaml {
  const doc = parseDocument(text, fileName);
  const unimplemented = Object.keys(doc).filter((key) => !TOP_LEVEL.has(key));
  const settings: YamlSettings = {};
  setIfDefined(settings, "host", optString(doc, "hostname", "hostname"));
  setIfDefined(settings, "port", optInt(doc, "port", "port", 0, 65_535));
  setIfDefined(settings, "maxRetries", optInt(doc, "max_retries", "max_retries", 0));
  setIfDefined(settings, "nodeId", optInt(doc, "node_id", "node_id", 0, 255));
  setIfDefined(settings, "schedule", optChoice(doc, "schedule_style", "schedule_style", ["context_first", "generation_first"] as const));
  setIfDefined(settings, "healthCheckIntervalMs", optInt(doc, "health_check_interval_ms", "health_check_interval_ms", 1));
  setIfDefined(settings, "healthCheckTimeoutMs", optInt(doc, "health_check_timeout_ms", "health_check_timeout_ms", 1));
  setIfDefined(settings, "healthCheckFailures", optInt(doc, "health_check_failures", "health_check_failures", 1));
  setIfDefined(settings, "healthCheckSuccesses", optInt(doc, "health_check_successes", "health_check_successes", 1));
  const drain = optInt(doc, "drain_timeout", "drain_timeout", 0);
  setIfDefined(settings, "drainTimeoutMs", drain === undefined ? undefined : drain * 1000);
  const context = readSection(doc, "context_servers", unimplemented);
  setIfDefined(settings, "contextServers", context.urls);
  setIfDefined(settings, "contextRouter", context.router);
  const generation = readSection(doc, "generation_servers", unimplemented);
  setIfDefined(settings, "generationServers", generation.urls);
  setIfDefined(settings, "generationRouter", generation.router);
  return { settings, unimplemented };
}

function parseDocument(text: string, fileName: string): Mapping {
  let doc: unknown;
  try {
    doc = Bun.YAML.parse(text);
  } catch (error) {
    throw new ConfigError(`Invalid config: ${fileName} is not valid YAML: ${error instanceof Error ? error.message : String(error)}`);
  }
  // An empty file is an empty config; the missing worker URLs are reported later, by name.
  if (doc === null || doc === undefined) return {};
  if (!isMapping(doc)) throw new ConfigError(`Invalid config: ${fileName} must hold a YAML mapping of settings`);
  return doc;
}

interface SectionSettings {
  readonly urls: string[] | undefined;
  readonly router: RouterType | undefined;
}

function readSection(doc: Mapping, key: string, unimplemented: string[]): SectionSettings {
  const section = doc[key];
  if (section === undefined || section === null) return { urls: undefined, router: undefined };
  if (!isMapping(section)) throw invalidConfig(key, "a mapping (num_instances, urls, router)");
  for (const name of Object.keys(section)) if (!SECTION.has(name)) unimplemented.push(`${key}.${name}`);
  const urls = readUrls(section, key);
  const instances = optInt(section, "num_instances", `${key}.num_instances`, 0);
  if (urls !== undefined && instances !== undefined && urls.length !== instances) {
    throw invalidConfig(`${key}.num_instances`, `the number of ${key}.urls (${urls.length}), not ${instances}`);
  }
  return { urls: urls === undefined ? undefined : [...new Set(urls)], router: readRouter(section, key, unimplemented) };
}

/** All listed URLs, normalised, duplicates kept: num_instances counts what the file lists. */
function readUrls(section: Mapping, key: string): string[] | undefined {
  const urls = section["urls"];
  if (urls === undefined || urls === null) return undefined;
  const expectation = `a list of "host:port" strings`;
  if (!Array.isArray(urls)) throw invalidConfig(`${key}.urls`, expectation);
  return urls.map((item: unknown, index) => {
    if (typeof item !== "string") throw invalidConfig(`${key}.urls`, expectation);
    const origin = normaliseUrl(item);
    if (origin === undefined) throw invalidConfig(`${key}.urls[${index}]`, `"host:port" or "http(s)://host:port", not ${JSON.stringify(item)}`);
    return origin;
  });
}

function readRouter(section: Mapping, key: string, unimplemented: string[]): RouterType | undefined {
  const router = section["router"];
  if (router === undefined || router === null) return undefined;
  if (!isMapping(router)) throw invalidConfig(`${key}.router`, "a mapping with a type");
  for (const name of Object.keys(router)) if (name !== "type") unimplemented.push(`${key}.router.${name}`);
  const type = router["type"];
  if (typeof type === "string" && UNSUPPORTED_ROUTERS.has(type)) {
    throw new ConfigError(`Invalid config: ${key}.router.type ${type} is not implemented by this proxy; use ${ROUTERS.join(" or ")}`);
  }
  return optChoice(router, "type", `${key}.router.type`, ROUTERS);
}

function optInt(map: Mapping, key: string, path: string, min: number, max?: number): number | undefined {
  const value = map[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "number" || !Number.isInteger(value) || value < min || value > (max ?? Number.MAX_SAFE_INTEGER)) {
    const range = max === undefined ? `>= ${min}` : `from ${min} to ${max}`;
    throw invalidConfig(path, `an integer ${range}, not ${JSON.stringify(value)}`);
  }
  return value;
}

function optString(map: Mapping, key: string, path: string): string | undefined {
  const value = map[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value.trim() === "") throw invalidConfig(path, `a non-empty string, not ${JSON.stringify(value)}`);
  return value;
}

function optChoice<T extends string>(map: Mapping, key: string, path: string, choices: readonly T[]): T | undefined {
  const value = map[key];
  if (value === undefined || value === null) return undefined;
  const choice = choices.find((candidate) => candidate === value);
  if (choice === undefined) throw invalidConfig(path, `one of ${choices.join(", ")}, not ${JSON.stringify(value)}`);
  return choice;
}

function setIfDefined<K extends YamlKey>(settings: YamlSettings, key: K, value: YamlSettings[K] | undefined): void {
  if (value !== undefined) settings[key] = value;
}

function isMapping(value: unknown): value is Mapping {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}
