import type { ProxyConfig } from "../config/types.ts";
import { isJsonObject, parseJson } from "../json.ts";
import type { Logger } from "../observability/logger.ts";
import type { WorkerEntry, WorkerPool } from "../routing/worker-pool.ts";
import { pause } from "../pipeline/retry.ts";

const PROBE_TIMEOUT_MS = 2000;

/**
 * Start-up readiness as trtllm-serve does it: poll every worker's /health until all answer
 * 200 or the start timeout passes; a ready worker's /server_info is fetched once.
 * Returns whether the pool is ready (at least one worker of each role).
 */
export async function waitForWorkers(
  pool: WorkerPool,
  config: Pick<ProxyConfig, "serverStartTimeoutMs" | "serverStartPollMs">,
  logger: Logger,
  signal: AbortSignal,
): Promise<boolean> {
  const deadline = performance.now() + config.serverStartTimeoutMs;
  const workers = [...pool.all("context"), ...pool.all("generation")];
  logger.info("waiting for workers", {
    context: pool.all("context").map((w) => w.origin),
    generation: pool.all("generation").map((w) => w.origin),
  });
  while (!signal.aborted) {
    await Promise.all(workers.filter((w) => !w.ready).map((w) => probe(w, logger, signal)));
    if (workers.every((w) => w.ready)) {
      logger.info("all workers are ready");
      return true;
    }
    const left = deadline - performance.now();
    if (left <= 0) break;
    await pause(Math.min(config.serverStartPollMs, left), signal).catch(() => {});
  }
  const waiting = workers.filter((w) => !w.ready).map((w) => `${w.role} ${w.origin}`);
  logger.warn("workers not ready at the end of the start timeout", { waiting });
  return pool.isReady();
}

async function probe(worker: WorkerEntry, logger: Logger, signal: AbortSignal): Promise<void> {
  const timeout = AbortSignal.any([signal, AbortSignal.timeout(PROBE_TIMEOUT_MS)]);
  try {
    const health = await fetch(`${worker.origin}/health`, { signal: timeout });
    await health.body?.cancel();
    if (health.status !== 200) return;
    worker.serverInfo = await fetchServerInfo(worker.origin, timeout);
    worker.ready = true;
    logger.info("worker is ready", { role: worker.role, worker: worker.origin });
  } catch {
    // Not up yet: the next poll tries again.
  }
}

async function fetchServerInfo(origin: string, signal: AbortSignal): Promise<WorkerEntry["serverInfo"]> {
  try {
    const response = await fetch(`${origin}/server_info`, { signal });
    if (!response.ok) return undefined;
    const info = parseJson(await response.text());
    return isJsonObject(info) ? info : undefined;
  } catch {
    return undefined;
  }
}
