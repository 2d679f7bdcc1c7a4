/**
 * A node id 0..255 no other proxy replica of the cluster holds: the first free key
 * `/disagg-proxy/<cluster_name>/node-ids/<n>` is created under a lease, kept alive while the
 * proxy runs and revoked on release.
 */

import { hostname } from "node:os";
import type { Logger } from "../observability/logger.ts";
import { EtcdClient } from "./etcd-client.ts";
import { LeaseKeeper, ttlSeconds } from "./lease-keeper.ts";
import type { ReconnectOptions } from "./types.ts";

export const NODE_IDS = 256;

export interface ClaimNodeIdOptions {
  endpoint: string;
  clusterName: string;
  /** The claim's lease TTL: a replica that dies frees its id after this long. */
  ttlMs: number;
  logger: Logger;
  reconnect?: ReconnectOptions;
}

export interface NodeIdClaim {
  readonly nodeId: number;
  release(): Promise<void>;
}

export function nodeIdKey(clusterName: string, nodeId: number): string {
  return `/disagg-proxy/${clusterName}/node-ids/${nodeId}`;
}

/** Rejects when etcd cannot be reached or every id is held. */
export async function claimNodeId(options: ClaimNodeIdOptions): Promise<NodeIdClaim> {
  const { clusterName, logger } = options;
  const client = new EtcdClient(options.endpoint);
  const owner = JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() });
  const { id: lease } = await client.grantLease(ttlSeconds(options.ttlMs));
  let nodeId: number | undefined;
  try {
    for (let n = 0; n < NODE_IDS && nodeId === undefined; n += 1) {
      if (await client.putIfAbsent(nodeIdKey(clusterName, n), owner, lease)) nodeId = n;
    }
  } catch (error) {
    await client.revoke(lease).catch(() => undefined);
    throw error;
  }
  if (nodeId === undefined) {
    await client.revoke(lease).catch(() => undefined);
    throw new Error(`All ${NODE_IDS} node ids of cluster "${clusterName}" are held by other proxies`);
  }
  const claimed = nodeId;
  const key = nodeIdKey(clusterName, claimed);
  const keeper = new LeaseKeeper({
    client,
    ttlMs: options.ttlMs,
    intervalMs: Math.max(1, Math.floor(options.ttlMs / 3)),
    logger,
    fields: { node_id: claimed, key },
    lease,
    // After a lost lease the same id is claimed again; if another replica took it meanwhile, ids may collide.
    attach: async (next) => {
      if (await client.putIfAbsent(key, owner, next)) return;
      logger.error("Node id was claimed by another proxy while this one was cut off from etcd; disagg_request_ids may collide", {
        node_id: claimed,
      });
    },
    ...(options.reconnect === undefined ? {} : { reconnect: options.reconnect }),
  });
  logger.info("Claimed node id", { node_id: claimed, key });
  return { nodeId: claimed, release: () => keeper.stop() };
}
