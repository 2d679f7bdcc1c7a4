import type { ProxyConfig } from "../config/types.ts";
import { DashboardRecorder, type DashboardSource } from "../dashboard/recorder.ts";
import type { LoopShare } from "./loop-share.ts";
import type { DiscoveryView, ModelView, WorkerView } from "../dashboard/snapshot.ts";
import type { DiscoveryStatus, RegisteredWorker } from "../discovery/index.ts";
import type { Placement } from "../routing/placement.ts";
import type { WorkerEntry } from "../workers/worker-pool.ts";
import type { AdmissionControl } from "../request/admission.ts";

/** What the dashboard shows of the configuration: whether the page needs a key (protectMetrics, default false), and where workers are discovered (default none: static lists). */
export type DashboardSourceSettings = Pick<ProxyConfig, "protectMetrics" | "discovery">;

interface SourceParts {
  readonly version: string;
  readonly placement: Placement;
  readonly admission: AdmissionControl;
  /** Requests in flight now. */
  readonly inFlight: () => number;
  readonly draining: () => boolean;
  readonly discoveryStatus: () => DiscoveryStatus | undefined;
  /** Workers registered through cluster discovery, with the ids they registered under. */
  readonly registered: () => readonly RegisteredWorker[] | undefined;
  /** Whether client keys are set now (they change on SIGHUP). */
  readonly clientKeysSet: () => boolean;
}

/**
 * The live status page's recorder; undefined with --no-dashboard, and on an extra event loop,
 * whose traffic goes to the main loop's recorder (loops/loop-dashboard.ts).
 */
export function dashboardOf(
  settings: DashboardSourceSettings & Pick<ProxyConfig, "dashboard">,
  loop: Pick<LoopShare, "traffic"> | undefined,
  parts: SourceParts,
): DashboardRecorder | undefined {
  return settings.dashboard && loop?.traffic === undefined ? new DashboardRecorder(dashboardSource(settings, parts)) : undefined;
}

/** The server's live state as the dashboard reads it once a second. */
export function dashboardSource(settings: DashboardSourceSettings, parts: SourceParts): DashboardSource {
  const { placement, admission } = parts;
  return {
    version: parts.version,
    pid: process.pid,
    inFlight: parts.inFlight,
    draining: parts.draining,
    protectedByKeys: () => settings.protectMetrics && parts.clientKeysSet(),
    admission: () => ({ inFlight: admission.inFlight, waiting: admission.waiting, limit: admission.limit }),
    workers: () => {
      const idOf = registeredIds(parts.registered() ?? []);
      return (["context", "generation"] as const).flatMap((role) =>
        placement.pool.all(role).map((worker): WorkerView => ({
          role,
          url: worker.origin,
          id: idOf(worker.origin),
          ready: worker.ready,
          inFlight: placement.table.load(role, worker.origin),
          version: versionOf(worker),
          ejectedFor: worker.outlier?.ejected?.reason,
        })),
      );
    },
    models: () =>
      placement.modelStatus().map((status): ModelView => ({
        model: status.model,
        contextReady: status.context.ready,
        contextWorkers: status.context.workers,
        generationReady: status.generation.ready,
        generationWorkers: status.generation.workers,
        inFlight: status.context.inFlight + status.generation.inFlight,
      })),
    discovery: (): DiscoveryView => {
      const discovery = settings.discovery;
      if (discovery === undefined) return { source: "static" };
      const status = parts.discoveryStatus();
      return {
        source: discovery.kind === "metadata" ? "etcd metadata" : discovery.storage === "http" ? "HTTP cluster storage" : "etcd cluster",
        endpoint: discovery.endpoint,
        connected: status?.connected ?? false,
        revision: status?.revision,
        lastError: status?.lastError,
      };
    },
  };
}

/** The TensorRT-LLM version the proxy speaks to it by, as /cluster_info shows it (an override says so). */
function versionOf(worker: WorkerEntry): string | undefined {
  const { version, source } = worker.protocol;
  if (version === undefined) return undefined;
  return source === "override" ? `${version} (--worker-protocol)` : version;
}

/**
 * origin → the id its worker registered under. A registration names host and port; a worker
 * that registered a wildcard host is reached at the address it registered from, so a port
 * alone identifies it when only one registration has that port.
 */
function registeredIds(registered: readonly RegisteredWorker[]): (origin: string) => string | undefined {
  if (registered.length === 0) return () => undefined;
  return (origin) => {
    let host: string;
    let port: number;
    try {
      const url = new URL(origin);
      host = url.hostname;
      port = Number(url.port || (url.protocol === "https:" ? 443 : 80));
    } catch {
      return undefined;
    }
    const samePort = registered.filter((worker) => worker.port === port);
    const exact = samePort.find((worker) => worker.host === host || `[${worker.host}]` === host);
    return (exact ?? (samePort.length === 1 ? samePort[0] : undefined))?.worker_id;
  };
}
