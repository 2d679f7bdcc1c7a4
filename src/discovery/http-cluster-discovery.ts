/**
 * disagg_cluster over the proxy's own HTTP cluster storage: the workers prefix of the store is
 * read, then watched, and fed into the same WorkerSet etcd discovery feeds (a worker joins on
 * SET, leaves on DELETE or expiry). As upstream's DisaggClusterManager does
 * (tensorrt_llm/serve/disagg_auto_scaling.py @ 00184339), but a worker that registered a
 * wildcard host (0.0.0.0, ::) is reached at the address its registration came from.
 */

import type { Logger } from "../observability/logger.ts";
import { parseWorker, workersPrefix } from "./cluster-discovery.ts";
import type { ClusterStore, StorageItem } from "./cluster-store.ts";
import type { Discovery, RegisteredWorker } from "./types.ts";
import { WorkerSet, type WorkerEntry } from "./worker-set.ts";

export interface HttpClusterDiscoveryOptions {
  readonly store: ClusterStore;
  readonly clusterName: string;
  readonly logger: Logger;
}

export interface HttpClusterDiscovery extends Discovery {
  /** The registered workers, as upstream's /cluster_info lists them. */
  registered(): RegisteredWorker[];
}

export function httpClusterDiscovery(options: HttpClusterDiscoveryOptions): HttpClusterDiscovery {
  const { store, logger } = options;
  const prefix = workersPrefix(options.clusterName);
  let unwatch: (() => void) | undefined;
  const entryOf = (item: StorageItem): WorkerEntry | undefined => parseWorker(item.key, item.value, logger, item.from);
  return {
    start(onEvent) {
      store.start();
      const workers = new WorkerSet(onEvent);
      unwatch = store.watch(prefix, (event) => workers.set(event.item.key, event.kind === "set" ? entryOf(event.item) : undefined));
      for (const item of store.items(prefix)) workers.set(item.key, entryOf(item));
      return Promise.resolve();
    },
    status: () => ({ connected: true, revision: undefined, lastError: undefined }),
    registered: () => store.items(prefix).flatMap((item) => entryOf(item)?.registered ?? []),
    stop() {
      unwatch?.();
      unwatch = undefined;
      store.stop();
      return Promise.resolve();
    },
  };
}
