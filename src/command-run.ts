/**
 * What serve's and the coordinator's processes share: the command they were started with,
 * how it is read again on SIGHUP, its start-up notes, and the end of the worker wait.
 */

import type { StartupNote } from "./config/load.ts";
import type { ProxyConfig } from "./config/types.ts";
import type { Logger } from "./observability/logger.ts";

/** Ends the process with `code` (main.ts, the only place that exits), printing `message` to stderr. */
export type Exit = (code: number, message?: string) => never;

/** A command's config, and the notes and warnings parsing it gave. */
export interface Command {
  readonly config: ProxyConfig;
  readonly notes: readonly StartupNote[];
  readonly warnings: readonly string[];
}

export interface CommandRun<C extends Command> {
  readonly command: C;
  /** The command line parsed again (SIGHUP); undefined when it no longer names this command. Throws what parsing throws. */
  readonly reread: () => C | undefined;
  readonly version: string;
  readonly logger: Logger;
  readonly exit: Exit;
}

/** The notes and warnings parsing gave, logged once the process starts. */
export function logStartupNotes(logger: Logger, notes: readonly StartupNote[], warnings: readonly string[]): void {
  for (const note of notes) logger[note.level](note.text);
  for (const warning of warnings) logger.warn(warning);
}

/**
 * The worker wait ended: "serving" when the workers were ready or discovery may still bring
 * them (said once), "gave-up" (logged) when the static workers never were.
 */
export function workerWaitEnded(ready: boolean, config: Pick<ProxyConfig, "discovery">, logger: Logger): "serving" | "gave-up" {
  if (ready) return "serving";
  if (config.discovery !== undefined) {
    // Discovered workers may still register: keep serving, /health says 503 meanwhile.
    logger.warn("not enough workers ready yet; waiting for more to register");
    return "serving";
  }
  // Upstream's words (trtllm-serve disaggregated), which operators' alerts may match.
  logger.error("Timeout waiting for context and generation servers to be ready");
  return "gave-up";
}
