/**
 * TensorRT-LLM's `disagg_cluster` layout: each worker keeps a key
 * `/trtllm-disagg/<cluster_name>/workers/<worker_id>` alive with a lease; its value is JSON
 * `{"worker_id", "host", "port", "role": 0 context | 1 generation}`.
 */

import type { Logger } from "../observability/logger.ts";
import { Background } from "./background.ts";
import { EtcdClient } from "./etcd-client.ts";
import { isObject } from "./etcd-wire.ts";
import { discoveredOrigin } from "../config/urls.ts";
import { PrefixMirror } from "./prefix-mirror.ts";
import type { Discovery, ReconnectOptions, RegisteredWorker, Role } from "./types.ts";
import { WorkerSet, type WorkerEntry } from "./worker-set.ts";

/** Upstream's ServerRole numbers; other roles (2 = multimodal encoder, …) are not ours to route. */
export const ROLE_NUMBERS: Readonly<Record<Role, number>> = { context: 0, generation: 1 };

/** The prefix every worker key of a cluster starts with (upstream's key prefix plus the `/`). */
export function workersPrefix(clusterName: string): string {
  return `/trtllm-disagg/${clusterName}/workers/`;
}

export interface ClusterDiscoveryOptions {
  /** `http://host:port` of etcd's client port (a comma list for several members). */
  endpoint: string;
  clusterName: string;
  logger: Logger;
  reconnect?: ReconnectOptions;
  livenessIntervalMs?: number;
}

export function etcdClusterDiscovery(options: ClusterDiscoveryOptions): Discovery & { registered(): RegisteredWorker[] } {
  const { logger } = options;
  const prefix = workersPrefix(options.clusterName);
  const mirror = new PrefixMirror({
    client: new EtcdClient(options.endpoint),
    prefix,
    logger,
    ...(options.reconnect === undefined ? {} : { reconnect: options.reconnect }),
    ...(options.livenessIntervalMs === undefined ? {} : { livenessIntervalMs: options.livenessIntervalMs }),
  });
  const background = new Background("etcd cluster discovery", logger);
  let known: WorkerSet | undefined;
  return {
    registered: () => known?.registered() ?? [],
    start(onEvent) {
      const workers = new WorkerSet(background.deliverTo(onEvent));
      known = workers;
      return background.start((signal, ready) =>
        mirror.run(
          {
            reset: (kvs) => workers.replaceAll(new Map(kvs.flatMap((kv) => entryPair(kv.key, parseWorker(kv.key, kv.value, logger))))),
            put: (key, value) => workers.set(key, parseWorker(key, value, logger)),
            delete: (key) => workers.set(key, undefined),
          },
          signal,
          ready,
        ),
      );
    },
    status: () => mirror.status(),
    stop: () => background.stop(),
  };
}

function entryPair(key: string, entry: WorkerEntry | undefined): [string, WorkerEntry][] {
  return entry === undefined ? [] : [[key, entry]];
}

/** upstream's ids are `<ROLE>-<host>:<port>-<pid>-<time>`: far shorter. */
const MAX_WORKER_ID_CHARS = 256;

/** A wildcard listen address says nothing about where the worker is. */
const WILDCARD_HOSTS = new Set(["0.0.0.0", "::", "[::]", ""]);

/**
 * A worker key's value → its role and origin; undefined (with a warning) when it names no
 * context or generation worker. `from` is the address the registration came from (HTTP
 * cluster storage): a worker registering a wildcard host is reached there.
 */
export function parseWorker(key: string, value: string, logger: Logger, from?: string): WorkerEntry | undefined {
  let info: unknown;
  try {
    info = JSON.parse(value);
  } catch {
    info = undefined;
  }
  if (!isObject(info)) {
    logger.warn("Ignoring a worker key whose value is not a JSON object", { key });
    return undefined;
  }
  const { host, port, role } = info;
  const roleName = role === ROLE_NUMBERS.context ? "context" : role === ROLE_NUMBERS.generation ? "generation" : undefined;
  if (roleName === undefined) {
    logger.debug("Ignoring a worker that is neither context nor generation", { key, role });
    return undefined;
  }
  const reachable = typeof host === "string" && WILDCARD_HOSTS.has(host) && from !== undefined ? unmapped(from) : host;
  const origin =
    typeof reachable === "string" && typeof port === "number" ? discoveredOrigin(`http://${bracketed(reachable)}:${port}`) : undefined;
  if (origin === undefined || typeof host !== "string" || typeof port !== "number") {
    logger.warn("Ignoring a worker key without a usable host and port", {
      key: key.slice(0, 256),
      host: typeof host === "string" ? host.slice(0, 256) : host,
      port,
    });
    return undefined;
  }
  // Shown by /cluster_info and the dashboard to every viewer: a registrant's text, so kept short.
  const workerId = (typeof info["worker_id"] === "string" ? info["worker_id"] : key.slice(key.lastIndexOf("/") + 1)).slice(
    0,
    MAX_WORKER_ID_CHARS,
  );
  // A registration may announce the worker's release; GET /version, read when it joins, wins.
  const version = typeof info["version"] === "string" ? info["version"] : undefined;
  return { role: roleName, origin, version, registered: { worker_id: workerId, host, port, role: ROLE_NUMBERS[roleName] } };
}

/** An IPv4 peer on a dual-stack socket shows as ::ffff:a.b.c.d. */
function unmapped(address: string): string {
  return address.startsWith("::ffff:") && address.includes(".") ? address.slice(7) : address;
}

/** An IPv6 literal needs brackets inside a URL. */
export function bracketed(host: string): string {
  return host.includes(":") && !host.startsWith("[") ? `[${host}]` : host;
}
