import type { ProxyConfig } from "../config/types.ts";
import type { DashboardSource } from "../dashboard/recorder.ts";
import type { DiscoveryView, WorkerView } from "../dashboard/snapshot.ts";
import type { DiscoveryStatus } from "../discovery/index.ts";
import type { Placement } from "../routing/placement.ts";
import type { WorkerEntry } from "../workers/worker-pool.ts";
import type { Admission } from "./admission.ts";

interface SourceParts {
  readonly config: ProxyConfig;
  readonly version: string;
  readonly placement: Placement;
  readonly admission: Admission;
  readonly active: ReadonlySet<unknown>;
  readonly draining: () => boolean;
  readonly discoveryStatus: () => DiscoveryStatus | undefined;
}

/** The server's live state as the dashboard reads it once a second. */
export function dashboardSource(parts: SourceParts): DashboardSource {
  const { config, placement, admission } = parts;
  return {
    version: parts.version,
    inFlight: () => parts.active.size,
    draining: parts.draining,
    admission: () => ({ inFlight: admission.inFlight, waiting: admission.waiting, limit: admission.limit }),
    workers: () =>
      (["context", "generation"] as const).flatMap((role) =>
        placement.pool.all(role).map(
          (worker): WorkerView => ({ role, url: worker.origin, ready: worker.ready, inFlight: placement.table.load(role, worker.origin), version: versionOf(worker) }),
        ),
      ),
    discovery: (): DiscoveryView => {
      const discovery = config.discovery;
      if (discovery === undefined) return { source: "static" };
      const status = parts.discoveryStatus();
      return {
        source: discovery.kind === "cluster" ? "etcd cluster" : "etcd metadata",
        endpoint: discovery.endpoint,
        connected: status?.connected ?? false,
        revision: status?.revision,
        lastError: status?.lastError,
      };
    },
  };
}

/** The version the worker reported in its /server_info, when it did. */
function versionOf(worker: WorkerEntry): string | undefined {
  const version = worker.serverInfo?.["version"];
  return typeof version === "string" ? version : undefined;
}
