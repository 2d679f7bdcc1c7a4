/**
 * Reader for TensorRT-LLM's disagg_config.yaml (`trtllm-serve disaggregated -c`). It takes
 * the keys the proxy implements and rejects wrong types with a ConfigError naming the key.
 * Keys that configure the workers (worker-keys.ts) are ignored silently, as upstream's proxy
 * ignores them; only keys nobody knows are listed, with the nearest known name, for one
 * warning at start-up.
 */

import { didYouMean } from "./did-you-mean.ts";
import { invalidConfig, ConfigError } from "./errors.ts";
import type { ProxyConfig, RouterOptions, RouterType } from "./types.ts";
import { WORKER_KEYS } from "./worker-keys.ts";
import { EXTRA_KEYS, readExtras, type ExtraSettings } from "./yaml-extras.ts";
import { centralizedWarning, ROUTER_ARG_NAMES, readRouter, readRouterOptions } from "./router-block.ts";
import { isMapping, optChoice, optInt, optString, type Mapping } from "./yaml-values.ts";
import { normaliseUrl } from "./urls.ts";

type YamlKey =
  | "host"
  | "bindHost"
  | "port"
  | "maxRetries"
  | "schedule"
  | "nodeId"
  | "numWorkers"
  | "contextServers"
  | "generationServers"
  | "contextRouter"
  | "generationRouter"
  | "routerOptions";

export type YamlSettings = { -readonly [K in YamlKey]?: ProxyConfig[K] } & ExtraSettings;

export interface TrtllmYaml {
  readonly settings: YamlSettings;
  /** Keys no one implements, as dotted paths with a hint, e.g. `context_servers.rooter (did you mean router?)`. */
  readonly unknown: readonly string[];
  /** Worker settings present (dotted paths): ignored here, as upstream's proxy ignores them. */
  readonly workerKeys: readonly string[];
  /** Keys that would change behaviour here and are not honoured, each a complete warning. */
  readonly warnings: readonly string[];
  /** num_instances per section as written (the hint for a file without urls). */
  readonly instances: { readonly context: number | undefined; readonly generation: number | undefined };
}

const TOP_LEVEL = new Set([
  "hostname",
  // Newer upstream binds it and advertises `hostname` (tests/unittest/disaggregated/test_disagg_listener_wiring.py @ 06837554).
  "bind_host",
  "port",
  "max_retries",
  "schedule_style",
  "node_id",
  "context_servers",
  "generation_servers",
  "num_workers",
  ...EXTRA_KEYS,
]);
/**
 * The parameters upstream's extract_disagg_cfg names; every other top-level key is handed down
 * to both sections (tensorrt_llm/llmapi/disagg_utils.py @ 0228a712).
 */
const UPSTREAM_NAMED = new Set([
  ...TOP_LEVEL,
  "perf_metrics_max_requests",
  "return_perf_metrics",
  "perf_metrics_output_dir",
  "conditional_disagg_config",
  "otlp_config",
  "disagg_cluster",
  "allow_request_chat_template",
  "gen_strip_message_history",
  "gen_tokids_ctxbytes",
  "disagg_coordinator_url",
]);
const SECTION = new Set(["num_instances", "urls", "router"]);
const SECTIONS = ["context_servers", "generation_servers"] as const;
/** Every name a key of the file may have, for did-you-mean. */
const KNOWN_NAMES = [...TOP_LEVEL, ...UPSTREAM_NAMED, ...SECTION, ...WORKER_KEYS, ...ROUTER_ARG_NAMES];

interface Findings {
  readonly unknown: string[];
  readonly workerKeys: string[];
  readonly warnings: string[];
}

export function parseTrtllmYaml(text: string, fileName: string): TrtllmYaml {
  const doc = parseDocument(text, fileName);
  const found: Findings = { unknown: [], workerKeys: [], warnings: [] };
  classifyTopLevel(doc, found);
  const sections = inheritTopLevel(doc);
  const settings: YamlSettings = {};
  setIfDefined(settings, "host", optString(doc, "hostname", "hostname"));
  setIfDefined(settings, "bindHost", optString(doc, "bind_host", "bind_host"));
  setIfDefined(settings, "port", optInt(doc, "port", "port", 0, 65_535));
  setIfDefined(settings, "maxRetries", optInt(doc, "max_retries", "max_retries", 0));
  setIfDefined(settings, "nodeId", optInt(doc, "node_id", "node_id", 0, 255));
  // Upstream forks num_workers processes; here they are event loops of one process (docs/cluster.md, --num-workers).
  setIfDefined(settings, "numWorkers", optInt(doc, "num_workers", "num_workers", 1, 64));
  setIfDefined(settings, "schedule", optChoice(doc, "schedule_style", "schedule_style", ["context_first", "generation_first"] as const));
  Object.assign(settings, readExtras(doc));
  const context = readSection(sections.context_servers, doc, "context_servers", found);
  setIfDefined(settings, "contextServers", context.urls);
  setIfDefined(settings, "contextRouter", context.router);
  const generation = readSection(sections.generation_servers, doc, "generation_servers", found);
  setIfDefined(settings, "generationServers", generation.urls);
  setIfDefined(settings, "generationRouter", generation.router);
  const centralized = (["context_servers", "generation_servers"] as const).filter(
    (section) => (section === "context_servers" ? context : generation).router === "centralized_kv_cache_aware",
  );
  if (centralized.length > 0) found.warnings.push(centralizedWarning(centralized));
  if (context.routerOptions !== undefined || generation.routerOptions !== undefined) {
    settings.routerOptions = Object.freeze({ context: context.routerOptions ?? {}, generation: generation.routerOptions ?? {} });
  }
  return { settings, ...found, instances: { context: context.instances, generation: generation.instances } };
}

function classifyTopLevel(doc: Mapping, found: Findings): void {
  for (const key of Object.keys(doc)) {
    if (TOP_LEVEL.has(key)) continue;
    else if (WORKER_KEYS.has(key)) found.workerKeys.push(key);
    else found.unknown.push(unknownKey(key, key, KNOWN_NAMES));
  }
}

function unknownKey(path: string, name: string, candidates: Iterable<string>): string {
  const near = didYouMean(name, candidates);
  return near === undefined ? path : `${path} (did you mean ${near}?)`;
}

/**
 * Upstream hands each top-level key it does not name down to both sections, and refuses a key
 * a section sets to another value (its message, disagg_utils.py @ 0228a712). The router reads
 * inherited keys too (`max_batch_size`, `kv_cache_config.tokens_per_block`).
 */
function inheritTopLevel(doc: Mapping): Record<(typeof SECTIONS)[number], Mapping | undefined> {
  const inherited = Object.entries(doc).filter(([key]) => !UPSTREAM_NAMED.has(key));
  const merged = (name: (typeof SECTIONS)[number]): Mapping | undefined => {
    const section = doc[name];
    if (section !== undefined && section !== null && !isMapping(section))
      throw invalidConfig(name, "a mapping (num_instances, urls, router)");
    const own: Mapping = section ?? {};
    for (const [key, value] of inherited) {
      if (key in own && !sameValue(own[key], value)) {
        throw new ConfigError(
          `Invalid config: Parameter ${key} is specified both in the top-level and in the ${name} section, but with different values`,
        );
      }
    }
    return section === undefined || section === null ? undefined : { ...Object.fromEntries(inherited), ...own };
  };
  return { context_servers: merged("context_servers"), generation_servers: merged("generation_servers") };
}

/** Python's `!=` on YAML values: deep, by value. */
function sameValue(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((item, index) => sameValue(item, b[index]));
  if (isMapping(a) && isMapping(b)) {
    const keys = Object.keys(a);
    return keys.length === Object.keys(b).length && keys.every((key) => key in b && sameValue(a[key], b[key]));
  }
  return false;
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
  readonly instances: number | undefined;
}

/** `section` is the section with the top-level keys it inherits; only its own keys are classified. */
function readSection(section: Mapping | undefined, doc: Mapping, key: string, found: Findings): SectionSettings {
  if (section === undefined) return { urls: undefined, router: undefined, routerOptions: undefined, instances: undefined };
  const urls = readUrls(section, key);
  const instances = optInt(section, "num_instances", `${key}.num_instances`, 0);
  if (urls !== undefined && instances !== undefined && urls.length !== instances) {
    // Upstream's launcher starts num_instances workers per section; here it must match the list, so say which number to write.
    throw new ConfigError(
      `Invalid config: ${key}.num_instances is ${instances} but ${key}.urls lists ${urls.length}: set ${key}.num_instances to ${urls.length} (or remove it)`,
    );
  }
  const own = doc[key];
  for (const name of Object.keys(isMapping(own) ? own : {})) {
    if (SECTION.has(name)) continue;
    if (WORKER_KEYS.has(name)) found.workerKeys.push(`${key}.${name}`);
    else found.unknown.push(unknownKey(`${key}.${name}`, name, KNOWN_NAMES));
  }
  const router = readRouter(section, key);
  const routerOptions = readRouterOptions(router, section, key, found);
  return { urls: urls === undefined ? undefined : [...new Set(urls)], router: router?.type, routerOptions, instances };
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
    if (origin === undefined)
      throw invalidConfig(`${key}.urls[${index}]`, `"host:port" or "http(s)://host:port", not ${JSON.stringify(item)}`);
    return origin;
  });
}

function setIfDefined<K extends YamlKey>(settings: YamlSettings, key: K, value: YamlSettings[K] | undefined): void {
  if (value !== undefined) settings[key] = value;
}
