/**
 * TensorRT-LLM's metadata server (`-m metadata_config.yaml`): each worker puts
 * `trtllm/<llm_id>` = JSON `{"url", "server_role" | "server_type", …}`. Every refresh interval
 * the list is read, every server's /health is checked (twice before it counts as dead), dead
 * servers' keys are deleted from etcd as upstream does, and the live ones of each role become
 * the worker list.
 */

import type { Logger } from "../observability/logger.ts";
import { Background } from "./background.ts";
import { delay } from "../timers.ts";
import { Backoff, messageOf } from "./backoff.ts";
import { EtcdClient, type KeyValue } from "./etcd-client.ts";
import { isObject, stringAt } from "./etcd-wire.ts";
import { discoveredOrigin } from "../config/urls.ts";
import type { Discovery, DiscoveryStatus, ReconnectOptions, Role } from "./types.ts";
import { WorkerSet, type WorkerEntry } from "./worker-set.ts";

export const METADATA_PREFIX = "trtllm/";

export interface MetadataDiscoveryOptions {
  endpoint: string;
  /** Bound on one /health check (health_check_timeout). */
  healthCheckTimeoutMs: number;
  /** Pause between two polls (refresh_interval). */
  refreshIntervalMs: number;
  logger: Logger;
  reconnect?: ReconnectOptions;
}

interface Server {
  readonly key: string;
  readonly url: string;
  readonly entry: WorkerEntry | undefined;
}

export function etcdMetadataDiscovery(options: MetadataDiscoveryOptions): Discovery {
  const { logger } = options;
  const client = new EtcdClient(options.endpoint);
  const background = new Background("etcd metadata discovery", logger);
  const backoff = new Backoff(options.reconnect);
  const state: DiscoveryStatus = { connected: false, revision: undefined, lastError: undefined };

  const poll = async (workers: WorkerSet): Promise<void> => {
    const { revision, kvs } = await client.range(METADATA_PREFIX);
    state.connected = true;
    state.lastError = undefined;
    state.revision = revision.toString();
    const servers = kvs.flatMap((kv) => serverOf(kv, logger));
    const healthy = await Promise.all(servers.map((server) => isHealthy(server.url, options.healthCheckTimeoutMs)));
    const live = new Map<string, WorkerEntry>();
    for (const [index, server] of servers.entries()) {
      if (healthy[index] === true) {
        if (server.entry !== undefined) live.set(server.key, server.entry);
        continue;
      }
      logger.info("Removing dead server from metadata server", { key: server.key, url: server.url });
      await client.delete(server.key);
    }
    if (background.signal.aborted) return;
    workers.replaceAll(live);
  };

  const loop = async (workers: WorkerSet, signal: AbortSignal, ready: () => void): Promise<void> => {
    while (!signal.aborted) {
      let wait = options.refreshIntervalMs;
      try {
        await poll(workers);
        backoff.reset();
        ready();
      } catch (error) {
        if (state.connected || state.lastError !== messageOf(error)) {
          logger.warn("etcd unreachable; keeping the last known workers", { error: messageOf(error) });
        }
        state.connected = false;
        state.lastError = messageOf(error);
        wait = Math.min(wait, backoff.next());
      }
      await delay(wait, signal);
    }
  };

  return {
    start(onEvent) {
      const workers = new WorkerSet(background.deliverTo(onEvent));
      return background.start((signal, ready) => loop(workers, signal, ready));
    },
    status: () => ({ ...state }),
    stop: () => background.stop(),
  };
}

/** Keys `trtllm/<name>` whose JSON has a `url`; the role is kept when it is context or generation. */
function serverOf(kv: KeyValue, logger: Logger): Server[] {
  if (kv.key.slice(METADATA_PREFIX.length).includes("/")) return [];
  let metadata: unknown;
  try {
    metadata = JSON.parse(kv.value);
  } catch {
    metadata = undefined;
  }
  const url = isObject(metadata) ? stringAt(metadata, "url") : undefined;
  if (!isObject(metadata) || url === undefined) return [];
  const role = roleOf(metadata["server_type"] || metadata["server_role"]);
  const origin = discoveredOrigin(url);
  if (origin === undefined) {
    logger.warn("Ignoring a metadata server entry whose url is not http(s)://host:port", { key: kv.key, url });
    return [];
  }
  // A registration may announce the worker's release; GET /version, read when it joins, wins.
  const version = stringAt(metadata, "version");
  return [{ key: kv.key, url: origin, entry: role === undefined ? undefined : { role, origin, version } }];
}

function roleOf(value: unknown): Role | undefined {
  const text = typeof value === "string" ? value.toLowerCase() : "";
  return text === "context" || text === "generation" ? text : undefined;
}

/** Upstream's rule: a server is dead only after two failed checks in a row. */
async function isHealthy(url: string, timeoutMs: number): Promise<boolean> {
  return (await checkOnce(url, timeoutMs)) || (await checkOnce(url, timeoutMs));
}

async function checkOnce(url: string, timeoutMs: number): Promise<boolean> {
  try {
    const response = await fetch(`${url}/health`, { signal: AbortSignal.timeout(timeoutMs) });
    await response.body?.cancel();
    return response.status === 200;
  } catch {
    return false;
  }
}
