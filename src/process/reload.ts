/**
 * SIGHUP: the config file and flags are read again. The worker lists, the TLS files and the
 * client keys take effect; any other changed setting needs a restart. Each reload writes one
 * line saying what was applied, what needs a restart and what was refused, with the warnings
 * start-up gives for the same files (unknown keys).
 */

import type { ProxyConfig } from "../config/types.ts";
import type { Logger } from "../observability/logger.ts";
import type { KeysReload } from "../server/app.ts";
import type { RunningProxy, WorkerChanges } from "../server/serve.ts";

/** The configuration read again, and the warnings reading it gave (serve-process.ts's ServeCommand). */
interface Reread {
  readonly config: ProxyConfig;
  readonly warnings: readonly string[];
}

/** What a reload applies itself; every other setting is read at start-up only. */
const APPLIED_KEYS: ReadonlySet<string> = new Set<keyof ProxyConfig>(["contextServers", "generationServers"]);

/**
 * The settings a reload found changed that it cannot apply, by their YAML names (port, hostname
 * is `host`, num_workers…), sorted. `current` is what the process runs; `next` what it read now.
 */
export function needsRestart(current: ProxyConfig, next: ProxyConfig): string[] {
  const was = new Map<string, unknown>(Object.entries(current));
  const changed = Object.entries(next).filter(
    ([key, value]) => !APPLIED_KEYS.has(key) && JSON.stringify(was.get(key)) !== JSON.stringify(value),
  );
  return changed.map(([key]) => snakeCase(key)).toSorted();
}

function snakeCase(key: string): string {
  return key.replaceAll(/[A-Z]/g, (letter) => `_${letter.toLowerCase()}`);
}

/** The worker list changes as one phrase each, e.g. "context_servers +http://c:2 -http://c:1". */
function workerPhrases(changes: WorkerChanges): string[] {
  return (["context", "generation"] as const).flatMap((role) => {
    const { added, removed } = changes[role];
    if (added.length === 0 && removed.length === 0) return [];
    return [[`${role}_servers`, ...added.map((url) => `+${url}`), ...removed.map((url) => `-${url}`)].join(" ")];
  });
}

function keysPhrase(keys: KeysReload): string | undefined {
  if (keys === undefined) return undefined;
  const source = keys.file ?? "DISAGG_PROXY_API_KEYS";
  return keys.refused === undefined ? `client keys ${source} (${keys.count} keys)` : undefined;
}

/**
 * Reads the configuration again and applies what a reload can; returns the configuration the
 * process now runs (`current` with the applied worker lists), unchanged when the reload was refused.
 */
export function reloadConfig(proxy: RunningProxy, reread: () => Reread | undefined, current: ProxyConfig, logger: Logger): ProxyConfig {
  let next: Reread | undefined;
  try {
    next = reread();
  } catch (error) {
    // A bad file or flag: one line with the reason, never a stack; nothing changes.
    logger.error("reload refused: keeping the running configuration", { refused: error instanceof Error ? error.message : String(error) });
    return current;
  }
  if (next === undefined) return current;
  const workers = proxy.replaceWorkers(next.config.contextServers, next.config.generationServers);
  const tls = proxy.reloadTls();
  const keys = proxy.app.reloadClientKeys();
  const applied = [
    ...workerPhrases(workers),
    ...(tls ? ["tls certificate re-read"] : []),
    ...[keysPhrase(keys)].filter((phrase) => phrase !== undefined),
  ];
  const restart = needsRestart(current, next.config);
  const refused = keys?.refused === undefined ? [] : [`client keys: ${keys.refused}; keeping the ${keys.count} current keys`];
  const fields = {
    applied: applied.length === 0 ? "nothing changed" : applied.join("; "),
    ...(restart.length === 0 ? {} : { needs_restart: restart.join(", ") }),
    ...(refused.length === 0 ? {} : { refused: refused.join("; ") }),
    ...(next.warnings.length === 0 ? {} : { warnings: next.warnings.join("; ") }),
  };
  if (refused.length > 0) logger.error("reloaded", fields);
  else if (restart.length > 0 || next.warnings.length > 0) logger.warn("reloaded", fields);
  else logger.info("reloaded", fields);
  return { ...current, contextServers: next.config.contextServers, generationServers: next.config.generationServers };
}
