/**
 * Reader for TensorRT-LLM's disagg_config.yaml (`trtllm-serve disaggregated -c`). It takes
 * the keys the proxy implements, rejects wrong types with a ConfigError naming the key, and
 * lists every other key so start-up can warn once instead of failing on a file that works
 * with trtllm-serve (where `backend`, `model`, parallel sizes, … configure the workers).
 */

import { invalidConfig, ConfigError } from "./errors.ts";
import type { ProxyConfig, RouterOptions, RouterType } from "./types.ts";
import { EXTRA_KEYS, readExtras, type ExtraSettings } from "./yaml-extras.ts";
import { isMapping, optBoolean, optChoice, optFraction, optInt, optString, type Mapping } from "./yaml-values.ts";
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
  | "routerOptions";

export type YamlSettings = { -readonly [K in YamlKey]?: ProxyConfig[K] } & ExtraSettings;

export interface TrtllmYaml {
  readonly settings: YamlSettings;
  /** Dotted paths of the keys present but not implemented, e.g. `context_servers.kv_cache_config`. */
  readonly unimplemented: readonly string[];
}


const TOP_LEVEL = new Set([
  "hostname",
  "port",
  "max_retries",
  "schedule_style",
  "node_id",
  "context_servers",
  "generation_servers",
  ...EXTRA_KEYS,
]);
const SECTION = new Set(["num_instances", "urls", "router"]);
const ROUTERS: readonly RouterType[] = ["round_robin", "load_balancing", "conversation", "kv_cache_aware"];
/** The `router:` arguments each type takes; others are listed as not implemented. */
const ROUTER_ARGS: Readonly<Record<RouterType, readonly string[]>> = {
  round_robin: [],
  load_balancing: [],
  conversation: ["match_threshold", "tokens_per_block", "max_sessions", "hash_skip_count", "use_token_ids"],
  kv_cache_aware: ["max_batch_size", "tokens_per_block"],
};

export function parseTrtllmYaml(text: string, fileName: string): TrtllmYaml {
  const doc = parseDocument(text, fileName);
  const unimplemented = Object.keys(doc).filter((key) => !TOP_LEVEL.has(key));
  const settings: YamlSettings = {};
  setIfDefined(settings, "host", optString(doc, "hostname", "hostname"));
  setIfDefined(settings, "port", optInt(doc, "port", "port", 0, 65_535));
  setIfDefined(settings, "maxRetries", optInt(doc, "max_retries", "max_retries", 0));
  setIfDefined(settings, "nodeId", optInt(doc, "node_id", "node_id", 0, 255));
  setIfDefined(settings, "schedule", optChoice(doc, "schedule_style", "schedule_style", ["context_first", "generation_first"] as const));
  Object.assign(settings, readExtras(doc));
  const context = readSection(doc, "context_servers", unimplemented);
  setIfDefined(settings, "contextServers", context.urls);
  setIfDefined(settings, "contextRouter", context.router);
  const generation = readSection(doc, "generation_servers", unimplemented);
  setIfDefined(settings, "generationServers", generation.urls);
  setIfDefined(settings, "generationRouter", generation.router);
  if (context.routerOptions !== undefined || generation.routerOptions !== undefined) {
    settings.routerOptions = Object.freeze({ context: context.routerOptions ?? {}, generation: generation.routerOptions ?? {} });
  }
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
  readonly routerOptions: RouterOptions | undefined;
}

function readSection(doc: Mapping, key: string, unimplemented: string[]): SectionSettings {
  const section = doc[key];
  if (section === undefined || section === null) return { urls: undefined, router: undefined, routerOptions: undefined };
  if (!isMapping(section)) throw invalidConfig(key, "a mapping (num_instances, urls, router)");
  const urls = readUrls(section, key);
  const instances = optInt(section, "num_instances", `${key}.num_instances`, 0);
  if (urls !== undefined && instances !== undefined && urls.length !== instances) {
    throw invalidConfig(`${key}.num_instances`, `the number of ${key}.urls (${urls.length}), not ${instances}`);
  }
  const router = readRouter(section, key);
  const routerOptions = readRouterOptions(router, section, key, unimplemented);
  return { urls: urls === undefined ? undefined : [...new Set(urls)], router: router?.type, routerOptions };
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

interface RouterBlock {
  readonly type: RouterType | undefined;
  /** The `router:` mapping; empty without one. */
  readonly block: Mapping;
}

function readRouter(section: Mapping, key: string): RouterBlock {
  const router = section["router"];
  if (router === undefined || router === null) return { type: undefined, block: {} };
  if (!isMapping(router)) throw invalidConfig(`${key}.router`, "a mapping with a type");
  return { type: optChoice(router, "type", `${key}.router.type`, ROUTERS), block: router };
}

/**
 * The router's arguments; section and router keys it does not read are listed as unimplemented.
 * As trtllm-serve does, a section's `max_batch_size` and `kv_cache_config.tokens_per_block`
 * stand in for arguments the `router:` block leaves out, for routers that take them.
 */
function readRouterOptions(router: RouterBlock, section: Mapping, key: string, unimplemented: string[]): RouterOptions | undefined {
  const args = ROUTER_ARGS[router.type ?? "round_robin"];
  // tokens_per_block "auto" (adopt the worker's) is not implemented: the router's default stays.
  const reads = (name: string): boolean => args.includes(name) && router.block[name] !== "auto";
  const given = (name: string): Mapping => (reads(name) ? router.block : {});
  const path = (name: string): string => `${key}.router.${name}`;
  const cache = isMapping(section["kv_cache_config"]) ? section["kv_cache_config"] : {};
  const sectionBlockSize = args.includes("tokens_per_block") ? optInt(cache, "tokens_per_block", `${key}.kv_cache_config.tokens_per_block`, 1) : undefined;
  const sectionBatch = args.includes("max_batch_size") ? optInt(section, "max_batch_size", `${key}.max_batch_size`, 1) : undefined;
  for (const name of Object.keys(section)) {
    if (SECTION.has(name) || (name === "max_batch_size" && sectionBatch !== undefined)) continue;
    if (name !== "kv_cache_config" || sectionBlockSize === undefined) unimplemented.push(`${key}.${name}`);
    else for (const sub of Object.keys(cache)) if (sub !== "tokens_per_block") unimplemented.push(`${key}.${name}.${sub}`);
  }
  for (const name of Object.keys(router.block)) if (name !== "type" && !reads(name)) unimplemented.push(path(name));
  const options: RouterOptions = {
    matchThreshold: optFraction(given("match_threshold"), "match_threshold", path("match_threshold")),
    tokensPerBlock: optInt(given("tokens_per_block"), "tokens_per_block", path("tokens_per_block"), 1) ?? sectionBlockSize,
    maxSessions: optInt(given("max_sessions"), "max_sessions", path("max_sessions"), 1),
    hashSkipCount: optInt(given("hash_skip_count"), "hash_skip_count", path("hash_skip_count"), 0),
    useTokenIds: optBoolean(given("use_token_ids"), "use_token_ids", path("use_token_ids")),
    maxBatchSize: optInt(given("max_batch_size"), "max_batch_size", path("max_batch_size"), 1) ?? sectionBatch,
  };
  const set = Object.entries(options).filter(([, value]) => value !== undefined);
  return set.length === 0 ? undefined : Object.freeze(Object.fromEntries(set));
}

function setIfDefined<K extends YamlKey>(settings: YamlSettings, key: K, value: YamlSettings[K] | undefined): void {
  if (value !== undefined) settings[key] = value;
}
