import type { Role } from "../config/types.ts";
import type { DiscoveryStatus, RegisteredWorker } from "../discovery/index.ts";
import type { JsonObject } from "../json/json.ts";
import type { LoadReport } from "../workers/load-report.ts";
import type { ModelRoleStatus, ModelStatus, Placement } from "./placement.ts";

/** This proxy's address: the advertised `hostname` (what --report-addr writes), the bound host, the port. */
export interface ServerAddress {
  readonly hostname: string;
  readonly bind_host: string;
  readonly port: number;
}

/**
 * GET /cluster_info: upstream's shape first (openai_disagg_server.py G3; disagg_auto_scaling.py
 * @ 00184339 cluster_info: is_ready, server_lists, current_workers with a cluster,
 * minimal_instances), then our extras: this proxy's address, in-flight load per worker,
 * discovery's state.
 */
export function clusterInfoOf(
  placement: Placement,
  discovery: DiscoveryStatus | undefined,
  registered: readonly RegisteredWorker[] | undefined,
  server: ServerAddress,
): JsonObject {
  const { pool, table } = placement;
  const describe = (role: Role): JsonObject[] =>
    pool.all(role).map((w) => ({
      url: w.origin,
      ready: w.ready,
      // "starting": it said it is loading its model (x-trtllm-server-state), which is no failure.
      state: w.outlier?.ejected !== undefined ? "ejected" : w.ready ? "ready" : w.starting === true ? "starting" : "not_ready",
      // Out of rotation because its requests kept failing (outlier-detector.ts): why, and for how much longer at least.
      ejected:
        w.outlier?.ejected === undefined
          ? null
          : {
              reason: w.outlier.ejected.reason,
              remaining_s: Math.max(0, Math.round((w.outlier.ejected.until - performance.now()) / 100) / 10),
              ejections: w.outlier.ejections,
            },
      in_flight: table.load(role, w.origin),
      // The load the routers weigh: the worker's own report blended in when reports are read (--worker-load-interval-ms).
      load: placement.loads?.load(role, w.origin) ?? table.load(role, w.origin),
      reported: reportedOf(placement.loads?.report(w.origin)),
      // The TensorRT-LLM version it reported and the optional fields it is sent (workers/protocol.ts).
      version: w.protocol.version ?? null,
      // What it serves, from its GET /v1/models (null: not known).
      models: w.models === undefined ? null : [...w.models],
      protocol: { source: w.protocol.source, accepts: [...w.protocol.accepts].toSorted() },
    }));
  return {
    is_ready: pool.isReady(),
    server_lists: { context: pool.all("context").map((w) => w.origin), generation: pool.all("generation").map((w) => w.origin) },
    ...(registered === undefined ? {} : { current_workers: currentWorkers(registered) }),
    minimal_instances: { context_servers: pool.minimal.context, generation_servers: pool.minimal.generation },
    server: { ...server },
    workers: { context: describe("context"), generation: describe("generation") },
    // Readiness and load per served model: a fleet of several models places each request on its model's workers.
    models: Object.fromEntries(
      placement
        .modelStatus()
        .map((status) => [
          status.model,
          { is_ready: modelReady(status), context: roleOf(status.context), generation: roleOf(status.generation) },
        ]),
    ),
    ...(discovery === undefined ? {} : { discovery: { ...discovery } }),
  };
}

/** The worker's latest fresh load report (null: none, or stale). */
function reportedOf(report: LoadReport | undefined): JsonObject | null {
  return report === undefined
    ? null
    : { running: report.running, waiting: report.waiting, kv_cache_utilization: report.kvUtilization ?? null };
}

function roleOf(status: ModelRoleStatus): JsonObject {
  return { workers: status.workers, ready: status.ready, in_flight: status.inFlight };
}

function modelReady(status: ModelStatus): boolean {
  return status.generation.ready > 0 && (status.context.ready > 0 || status.context.workers === 0);
}

/** Registered workers by role, each `{worker_id, host, port, role}` as the worker wrote it (0 context, 1 generation). */
function currentWorkers(registered: readonly RegisteredWorker[]): JsonObject {
  return {
    context_servers: registered.filter((worker) => worker.role === 0).map(entry),
    generation_servers: registered.filter((worker) => worker.role === 1).map(entry),
  };
}

function entry(worker: RegisteredWorker): JsonObject {
  return { worker_id: worker.worker_id, host: worker.host, port: worker.port, role: worker.role };
}
