/**
 * The HTTP cluster storage (disagg_cluster.cluster_uri http://…), served on the coordinator's own
 * port as upstream mounts it on its coordinator app (coordinator_server.py [id 56726411408]:
 * HttpClusterStorageServer.add_routes): workers register with the coordinator, which owns
 * discovery. The routes, their callers' checks and FastAPI's answers are serve's
 * (routes/cluster-storage.ts); the Host check is serve's too (security/browser-guard.ts).
 */

import { hostname } from "node:os";
import type { ProxyConfig } from "../config/types.ts";
import { ClusterStore } from "../discovery/index.ts";
import { ProxyError } from "../errors.ts";
import type { Logger } from "../observability/logger.ts";
import {
  clusterDelete,
  clusterExpire,
  clusterGet,
  clusterGetPrefix,
  clusterSet,
  storageErrorResponse,
  type StorageDeps,
} from "../routes/cluster-storage.ts";
import type { Connection, IdleBound } from "../routes/deps.ts";
import { ClusterAccess } from "../security/cluster-access.ts";
import { HostCheck } from "../security/browser-guard.ts";
import type { ExtraRoutes } from "./http.ts";

export interface CoordinatorStorage {
  readonly store: ClusterStore;
  readonly routes: ExtraRoutes;
}

/** Storage calls are short: the coordinator's idle bound is never lifted for them. */
const NO_IDLE_BOUND: IdleBound = { restore: () => {} };

type StorageRoute = (deps: StorageDeps, request: Request, connection: Connection) => Response | Promise<Response>;

const ROUTES: ReadonlyArray<readonly [string, string, StorageRoute]> = [
  ["/set", "POST", clusterSet],
  ["/get", "GET", clusterGet],
  ["/expire", "GET", clusterExpire],
  ["/get_prefix", "GET", clusterGetPrefix],
  ["/delete", "DELETE", clusterDelete],
];

type StorageSettings = Pick<
  ProxyConfig,
  | "discovery"
  | "clusterAllowFrom"
  | "clusterKey"
  | "internalAuthKey"
  | "host"
  | "bindHost"
  | "allowedHosts"
  | "maxBodyBytes"
  | "bodyMinBytesPerSecond"
  | "bodyGraceMs"
>;

/** The store and its routes when the cluster_uri is http(s)://, else undefined. */
export function coordinatorStorage(config: StorageSettings, logger: Logger): CoordinatorStorage | undefined {
  const discovery = config.discovery;
  if (discovery?.kind !== "cluster" || discovery.storage !== "http") return undefined;
  const store = new ClusterStore({
    onStall: (ms) => logger.warn("the coordinator stalled: cluster storage TTLs extended by the stall", { stall_ms: Math.round(ms) }),
  });
  const deps: StorageDeps = {
    clusterStorage: {
      store,
      access: new ClusterAccess({ allowFrom: config.clusterAllowFrom, key: config.clusterKey ?? config.internalAuthKey }),
    },
    logger,
    bodyLimits: { maxBytes: config.maxBodyBytes, minBytesPerSecond: config.bodyMinBytesPerSecond, graceMs: config.bodyGraceMs },
  };
  const hosts = new HostCheck([
    config.host,
    hostname(),
    ...config.allowedHosts,
    ...(config.bindHost === undefined ? [] : [config.bindHost]),
    new URL(discovery.endpoint).hostname,
  ]);
  const routes = new Map(
    ROUTES.map(([path, method, route]) => [
      path,
      async (request: Request, peer: string | undefined): Promise<Response> => {
        if (request.method !== method) return Response.json({ detail: "Method Not Allowed" }, { status: 405, headers: { allow: method } });
        // Against DNS rebinding: a page's request names a host that is none of ours (421), as serve answers.
        if (!hosts.allows(request.headers.get("host"))) return Response.json({ detail: "Misdirected Request" }, { status: 421 });
        try {
          return await route(deps, request, { keepOpen: () => NO_IDLE_BOUND, peer: () => peer });
        } catch (error) {
          if (error instanceof ProxyError) return storageErrorResponse(error);
          throw error;
        }
      },
    ]),
  );
  return { store, routes };
}
