import type { Role } from "../config/types.ts";
import type { ProxyConfig } from "../config/types.ts";
import type { Logger } from "../observability/logger.ts";
import { delay } from "../timers.ts";
import type { WorkerPool } from "./worker-pool.ts";
import type { HealthMonitor } from "./health-monitor.ts";

/**
 * Start-up readiness as trtllm-serve does it: check every worker's /health each poll
 * interval until all are ready (static lists) or the pool is ready (discovered workers,
 * which come and go), or the start timeout passes. Returns whether the pool is ready.
 */
export async function waitForWorkers(
  pool: WorkerPool,
  monitor: HealthMonitor,
  config: Pick<ProxyConfig, "serverStartTimeoutMs" | "serverStartPollMs"> & { readonly discovered: boolean },
  logger: Logger,
  signal: AbortSignal,
): Promise<boolean> {
  const deadline = performance.now() + config.serverStartTimeoutMs;
  const everyone = (): boolean =>
    config.discovered ? pool.isReady() : [...pool.all("context"), ...pool.all("generation")].every((w) => w.ready);
  logger.info("waiting for workers", {
    context: pool.all("context").map((w) => w.origin),
    generation: pool.all("generation").map((w) => w.origin),
  });
  while (!signal.aborted) {
    await monitor.checkAll(signal);
    if (everyone()) {
      logger.info("all workers are ready");
      return true;
    }
    if (config.discovered) logger.info(`waiting for workers to register: ${missingText(pool)}`);
    const left = deadline - performance.now();
    if (left <= 0) break;
    // Until the next poll, or sooner when another round ends: registrations handed over by the
    // process taking over (or discovered) start one, and waiting out the poll cost 3 s of take-over.
    const waited = new AbortController();
    await Promise.race([delay(Math.min(config.serverStartPollMs, left), AbortSignal.any([signal, waited.signal])), monitor.nextRound()]);
    waited.abort();
  }
  // Stopped (a signal during start-up): not a timeout, nothing to warn about.
  if (signal.aborted) return pool.isReady();
  const waiting = [...pool.all("context"), ...pool.all("generation")]
    .filter((w) => !w.ready)
    .map((w) => `${w.role} ${w.origin}${w.starting === true ? " (starting)" : ""}`);
  logger.warn("workers not ready at the end of the start timeout", { waiting });
  return pool.isReady();
}

/** What discovery still lacks, e.g. "need 2 context workers, have 1; need 1 generation worker, have 1". */
export function missingText(pool: WorkerPool): string {
  const role = (name: Role): string => {
    const need = pool.minimal[name];
    return `need ${need} ${name} worker${need === 1 ? "" : "s"}, have ${pool.ready(name).length}`;
  };
  return `${role("context")}; ${role("generation")}`;
}

/** After start-up: one round of checks every interval until stopped. */
export async function monitorWorkers(monitor: HealthMonitor, intervalMs: number, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    await delay(intervalMs, signal);
    if (signal.aborted) return;
    await monitor.checkAll(signal);
  }
}
