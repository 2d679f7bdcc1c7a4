/**
 * A replica's workers when its coordinator owns the HTTP cluster storage (disagg_coordinator_url
 * with an http(s) cluster_uri): workers register at the coordinator, so the replica takes the
 * coordinator's GET /cluster_info `server_lists`, as upstream's delegating server does
 * (disagg_coordinator.py @ 0186c597, CoordinatorClient._sync_stateless_routers), asked every
 * `intervalMs`. A list it cannot read keeps the workers it has.
 */

import type { Role } from "../config/types.ts";
import { normaliseUrl } from "../config/urls.ts";
import type { Discovery, DiscoveryEvent, DiscoveryStatus } from "../discovery/index.ts";
import type { ClusterInfo } from "./coordinator-wire.ts";
import { delay } from "../timers.ts";

export interface CoordinatorListSettings {
  /** The coordinator's /cluster_info, or why it could not be read. */
  readonly clusterInfo: () => Promise<ClusterInfo | string>;
  readonly intervalMs: number;
}

export function coordinatorListDiscovery(settings: CoordinatorListSettings): Discovery {
  const stopping = new AbortController();
  const status: DiscoveryStatus = { connected: false, revision: undefined, lastError: undefined };
  const known: Record<Role, Set<string>> = { context: new Set(), generation: new Set() };
  let running: Promise<void> | undefined;
  const sync = (info: ClusterInfo, onEvent: (event: DiscoveryEvent) => void): void => {
    for (const role of ["context", "generation"] as const) {
      const listed = new Set(info.serverLists[role].flatMap((server) => normaliseUrl(server) ?? []));
      for (const origin of known[role]) if (!listed.has(origin)) onEvent({ kind: "remove", role, origin });
      for (const origin of listed) if (!known[role].has(origin)) onEvent({ kind: "add", role, origin });
      known[role] = listed;
    }
  };
  const poll = async (onEvent: (event: DiscoveryEvent) => void, listed: () => void): Promise<void> => {
    while (!stopping.signal.aborted) {
      // oxlint-disable-next-line no-await-in-loop -- one question at a time, every intervalMs
      const info = await settings.clusterInfo();
      if (stopping.signal.aborted) return;
      status.connected = typeof info !== "string";
      status.lastError = typeof info === "string" ? info : undefined;
      if (typeof info !== "string") {
        sync(info, onEvent);
        listed();
      }
      // oxlint-disable-next-line no-await-in-loop -- the wait between two questions
      await delay(settings.intervalMs, stopping.signal);
    }
  };
  return {
    start(onEvent) {
      return new Promise((resolve) => {
        running = poll(onEvent, resolve).finally(resolve);
      });
    },
    status: () => ({ ...status }),
    async stop() {
      stopping.abort();
      await running;
    },
  };
}
