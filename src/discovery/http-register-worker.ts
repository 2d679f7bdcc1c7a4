/**
 * A worker's side of `disagg_cluster` over upstream's HTTP cluster storage, as
 * `trtllm-serve serve --disagg_cluster_uri http://proxy:port` does it
 * (tensorrt_llm/serve/disagg_auto_scaling.py @ 00184339, DisaggClusterWorker, through
 * tensorrt_llm/serve/cluster_storage.py @ 057d4a79, HttpClusterStorageClient):
 * - register: POST /set `{key, value, ttl: inactive_timeout_sec, overwrite_if_exists: false}`,
 *   retried every 5 s until it answers 200;
 * - heartbeat: every heartbeat_interval_sec GET /expire?key=&ttl=; anything but 200 means the
 *   key is gone (the proxy restarted, or the key expired): register again;
 * - stop: DELETE /delete?key=.
 * Every call has upstream's 5 s bound and stops with the worker.
 */

import type { Logger } from "../observability/logger.ts";
import { ROLE_NUMBERS, workersPrefix } from "./cluster-discovery.ts";
import { workerIdOf, type WorkerRegistration } from "./register-worker.ts";
import type { Role } from "./types.ts";

export interface HttpRegistration {
  /** The cluster_uri: `http(s)://proxy:port`. */
  readonly uri: string;
  readonly clusterName: string;
  /** heartbeat_interval_sec, in ms. */
  readonly heartbeatMs: number;
  /** inactive_timeout_sec, in ms (sent as whole seconds, as upstream's int field). */
  readonly ttlMs: number;
  /** Sent as `Authorization: Bearer`, as upstream's client does with an api_key. */
  readonly key?: string | undefined;
  readonly logger: Logger;
  /** Pause before a failed registration is tried again (upstream: 5 s). */
  readonly retryMs?: number;
}

const CALL_TIMEOUT_MS = 5000;
const RETRY_MS = 5000;

/** Registers each worker (and role) it is handed: what main.ts injects into the emulated worker. */
export function httpRegistrar(
  settings: HttpRegistration,
): (worker: { readonly role: Role; readonly host: string; readonly port: number }) => WorkerRegistration {
  return (worker) => registerOverHttp(settings, worker.role, worker.host, worker.port);
}

export function registerOverHttp(settings: HttpRegistration, role: Role, host: string, port: number): WorkerRegistration {
  const { logger } = settings;
  const workerId = workerIdOf(role, host, port);
  const key = `${workersPrefix(settings.clusterName)}${workerId}`;
  const ttl = Math.max(1, Math.round(settings.ttlMs / 1000));
  const item = {
    key,
    value: JSON.stringify({ worker_id: workerId, host, port, role: ROLE_NUMBERS[role] }),
    ttl,
    expire_time: -1,
    overwrite_if_exists: false,
  };
  const stopping = new AbortController();
  const base = settings.uri.replace(/\/+$/, "");
  const headers: Record<string, string> = settings.key === undefined ? {} : { authorization: `Bearer ${settings.key}` };

  const call = async (path: string, method: string, body?: string): Promise<boolean> => {
    try {
      const signal = AbortSignal.any([stopping.signal, AbortSignal.timeout(CALL_TIMEOUT_MS)]);
      const sent = body === undefined ? headers : { ...headers, "content-type": "application/json" };
      const response = await fetch(`${base}${path}`, { method, headers: sent, signal, ...(body === undefined ? {} : { body }) });
      await response.arrayBuffer();
      return response.status === 200;
    } catch (error) {
      if (!stopping.signal.aborted) logger.warn("cluster storage call failed", { path, error });
      return false;
    }
  };
  const pause = (ms: number): Promise<void> =>
    new Promise((resolve) => {
      const timer = setTimeout(resolve, ms);
      stopping.signal.addEventListener("abort", () => (clearTimeout(timer), resolve()), { once: true });
    });
  const register = async (): Promise<void> => {
    while (!stopping.signal.aborted) {
      if (await call("/set", "POST", JSON.stringify(item))) {
        logger.info("worker registered", { worker_id: workerId, key });
        return;
      }
      if (stopping.signal.aborted) return;
      logger.warn("worker registration failed, retrying", { worker_id: workerId, retry_ms: settings.retryMs ?? RETRY_MS });
      await pause(settings.retryMs ?? RETRY_MS);
    }
  };
  const heartbeat = async (): Promise<void> => {
    await register();
    // Upstream beats only when the interval is positive and shorter than the TTL.
    if (!(settings.heartbeatMs > 0 && settings.heartbeatMs < settings.ttlMs)) {
      logger.warn("heartbeat disabled: heartbeat_interval_sec must be positive and below inactive_timeout_sec", { worker_id: workerId });
      return;
    }
    while (!stopping.signal.aborted) {
      await pause(settings.heartbeatMs);
      if (stopping.signal.aborted) return;
      const query = new URLSearchParams({ key, ttl: String(ttl) }).toString();
      if (await call(`/expire?${query}`, "GET")) continue;
      if (stopping.signal.aborted) return;
      logger.warn("worker heartbeat failed, re-registering", { worker_id: workerId });
      await register();
    }
  };
  const running = heartbeat().catch((error: unknown) => logger.error("worker registration stopped", { worker_id: workerId, error }));
  return {
    workerId,
    key,
    async stop() {
      stopping.abort();
      await running;
      // The deregistration gets its own bound: the worker is leaving either way.
      try {
        const response = await fetch(`${base}/delete?${new URLSearchParams({ key }).toString()}`, {
          method: "DELETE",
          headers,
          signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
        });
        await response.arrayBuffer();
        if (response.status !== 200) logger.warn("worker deregistration failed", { worker_id: workerId, status: response.status });
      } catch (error) {
        logger.warn("worker deregistration failed", { worker_id: workerId, error });
      }
    },
  };
}
