/**
 * A section's `router:` block of disagg_config.yaml: its type and the arguments that type takes
 * (upstream's RouterConfig.args: every key of the block but `type`, disagg_utils.py
 * extract_router_config).
 */

import { didYouMean } from "./did-you-mean.ts";
import { invalidConfig } from "./errors.ts";
import type { RouterOptions, RouterType } from "./types.ts";
import { isMapping, optBoolean, optChoice, optFraction, optInt, optPositive, optString, type Mapping } from "./yaml-values.ts";

/** upstream's router_map (tensorrt_llm/serve/router.py create_router, read_file id 56124310390). */
const ROUTERS: readonly RouterType[] = [
  "round_robin",
  "load_balancing",
  "conversation",
  "kv_cache_aware",
  "centralized_kv_cache_aware",
  "remote_http",
];

/** CentralizedKVCacheRouter's arguments this proxy takes and does not use: it runs the type as kv_cache_aware. */
const CENTRALIZED_ONLY_ARGS = [
  "custom_tokenizer",
  "tokenizer_dir",
  "router_port",
  "load_weight",
  "rank_routing_algo",
  "fair_share_multiplier",
  "match_rate_threshold",
  "load_suspend_s",
  "stale_timeout_s",
];

/** The `router:` arguments each type takes; others are listed as unknown. */
const ROUTER_ARGS: Readonly<Record<RouterType, readonly string[]>> = {
  round_robin: [],
  load_balancing: ["use_tokens"],
  conversation: ["match_threshold", "tokens_per_block", "max_sessions", "hash_skip_count", "use_token_ids"],
  kv_cache_aware: ["max_batch_size", "tokens_per_block"],
  centralized_kv_cache_aware: ["max_batch_size", "tokens_per_block", ...CENTRALIZED_ONLY_ARGS],
  remote_http: ["remote_url", "request_timeout_s"],
};

/** Every argument name of every router, for did-you-mean. */
export const ROUTER_ARG_NAMES: readonly string[] = [...new Set(Object.values(ROUTER_ARGS).flat())];

export interface RouterBlock {
  readonly type: RouterType | undefined;
  /** The `router:` mapping; empty without one. */
  readonly block: Mapping;
}

/** What reading a block found: keys nobody takes, and warnings for start-up. */
export interface RouterFindings {
  readonly unknown: string[];
}

export function readRouter(section: Mapping, key: string): RouterBlock {
  const router = section["router"];
  if (router === undefined || router === null) return { type: undefined, block: {} };
  if (!isMapping(router)) throw invalidConfig(`${key}.router`, "a mapping with a type");
  return { type: optChoice(router, "type", `${key}.router.type`, ROUTERS), block: router };
}

/**
 * The router's arguments. As trtllm-serve does, a section's `max_batch_size` and
 * `kv_cache_config.tokens_per_block` stand in for arguments the `router:` block leaves out,
 * for routers that take them. Router keys the type does not take are listed as unknown.
 */
export function readRouterOptions(router: RouterBlock, section: Mapping, key: string, found: RouterFindings): RouterOptions | undefined {
  const args = ROUTER_ARGS[router.type ?? "round_robin"];
  // tokens_per_block "auto" (adopt the worker's) is not implemented: the router's default stays.
  const reads = (name: string): boolean => args.includes(name) && router.block[name] !== "auto";
  const given = (name: string): Mapping => (reads(name) ? router.block : {});
  const path = (name: string): string => `${key}.router.${name}`;
  const cache = isMapping(section["kv_cache_config"]) ? section["kv_cache_config"] : {};
  const sectionBlockSize = args.includes("tokens_per_block")
    ? optInt(cache, "tokens_per_block", `${key}.kv_cache_config.tokens_per_block`, 1)
    : undefined;
  const sectionBatch = args.includes("max_batch_size") ? optInt(section, "max_batch_size", `${key}.max_batch_size`, 1) : undefined;
  for (const name of Object.keys(router.block)) {
    if (name !== "type" && !reads(name) && !(args.includes(name) && router.block[name] === "auto"))
      found.unknown.push(unknownKey(path(name), name, args));
  }
  const timeoutS = optPositive(given("request_timeout_s"), "request_timeout_s", path("request_timeout_s"));
  const options: RouterOptions = {
    matchThreshold: optFraction(given("match_threshold"), "match_threshold", path("match_threshold")),
    tokensPerBlock: optInt(given("tokens_per_block"), "tokens_per_block", path("tokens_per_block"), 1) ?? sectionBlockSize,
    maxSessions: optInt(given("max_sessions"), "max_sessions", path("max_sessions"), 1),
    hashSkipCount: optInt(given("hash_skip_count"), "hash_skip_count", path("hash_skip_count"), 0),
    useTokenIds: optBoolean(given("use_token_ids"), "use_token_ids", path("use_token_ids")),
    maxBatchSize: optInt(given("max_batch_size"), "max_batch_size", path("max_batch_size"), 1) ?? sectionBatch,
    useTokens: optBoolean(given("use_tokens"), "use_tokens", path("use_tokens")),
    remoteUrl: router.type === "remote_http" ? remoteUrlOf(router.block, path("remote_url")) : undefined,
    requestTimeoutMs: timeoutS === undefined ? undefined : Math.round(timeoutS * 1000),
  };
  const set = Object.entries(options).filter(([, value]) => value !== undefined);
  return set.length === 0 ? undefined : Object.freeze(Object.fromEntries(set));
}

/** remote_http's `remote_url`: required, as upstream's RemoteHttpRouter raises without one; an http(s) base URL. */
function remoteUrlOf(block: Mapping, path: string): string {
  const value = optString(block, "remote_url", path);
  if (value === undefined)
    throw invalidConfig(path, "set for router type remote_http (the router HTTP server's base URL, e.g. http://router-host:8080)");
  let url: URL | undefined;
  try {
    url = new URL(value);
  } catch {
    url = undefined;
  }
  if (url === undefined || (url.protocol !== "http:" && url.protocol !== "https:") || url.search !== "" || url.hash !== "")
    throw invalidConfig(path, `an http(s) base URL such as http://router-host:8080, not ${JSON.stringify(value)}`);
  return value.replace(/\/+$/, "");
}

/**
 * The one start-up warning of centralized_kv_cache_aware, naming the sections that ask for it.
 * Upstream's CentralizedKVCacheRouter binds a ZMQ PULL socket (router_port, 5557) that workers
 * push HMAC-signed pickled reports to, and answers per-rank route hints; here the type runs as
 * kv_cache_aware (docs/upstream-conformance.md says why).
 */
export function centralizedWarning(sections: readonly string[]): string {
  return (
    `${sections.map((section) => `${section}.router.type`).join(" and ")} centralized_kv_cache_aware runs as kv_cache_aware: ` +
    "the proxy polls each worker's /kv_cache_events instead of binding upstream's ZMQ ingest (router_port, 5557), " +
    `sends no per-rank route_hint, and leaves ${CENTRALIZED_ONLY_ARGS.join(", ")} unused`
  );
}

function unknownKey(path: string, name: string, candidates: Iterable<string>): string {
  const near = didYouMean(name, candidates);
  return near === undefined ? path : `${path} (did you mean ${near}?)`;
}
