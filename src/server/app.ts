import { Clients } from "../request/client-address.ts";
import { DeadlineWheel } from "../deadline-wheel.ts";
import { hostname } from "node:os";
import type { ProxyConfig } from "../config/types.ts";
import type { DashboardRecorder } from "../dashboard/recorder.ts";
import { ClusterStore, type DiscoveryStatus, type RegisteredWorker } from "../discovery/index.ts";
import type { Logger } from "../observability/logger.ts";
import { createMetrics, type ProxyMetrics } from "../observability/metrics.ts";
import { openRequestTrace, type RequestTraceWriter } from "../observability/request-trace.ts";
import { Telemetry } from "../observability/telemetry.ts";
import { HandoffSettler } from "../pipeline/handoff/settler.ts";
import { callOneWorker } from "../pipeline/one-shot.ts";
import { runPipeline } from "../pipeline/orchestrate.ts";
import type { PipelineDeps, PipelineSettings } from "../pipeline/types.ts";
import { Admission, SharedAdmission, type AdmissionControl } from "../request/admission.ts";
import { DisaggIdAllocator } from "../request/disagg-id.ts";
import { modelGauges, workerGauges } from "../request/metrics-hooks.ts";
import type { RequestEnds } from "../request/request-end.ts";
import { Requests } from "../request/requests.ts";
import { modelNamesOf } from "../routing/model-choice.ts";
import { Placement } from "../routing/placement.ts";
import { Coordination } from "../routing/coordination.ts";
import type { ClusterStorageDeps, RouteDeps, RouteSettings } from "../routes/deps.ts";
import { wheelClock } from "../streaming/stream-request.ts";
import { loadClientKeys, type ClientKeys } from "../security/api-keys.ts";
import { HostCheck } from "../security/browser-guard.ts";
import { ClusterAccess } from "../security/cluster-access.ts";
import { JSON_CODEC, msgpackCodec } from "../workers/body-codec.ts";
import type { OutlierDetector } from "../workers/outlier-detector.ts";
import { fetchWorkerPerfMetrics } from "../workers/perf-metrics-fetch.ts";
import { createWorkerFetch, type WorkerFetch } from "../workers/transport.ts";
import { clusterInfoOf } from "../routing/cluster-info.ts";
import { dashboardOf } from "./dashboard-source.ts";
import type { DispatchSettings } from "./dispatch.ts";
import type { RunningDiscovery } from "../routing/worker-discovery.ts";
import type { LoopShare } from "./loop-share.ts";
import { modelListOf, modelReadyOf } from "../routing/model-list.ts";

/**
 * The server's own state, built once per server (no module state): what the routes declared
 * they need (RouteDeps), the pipeline's dependencies, and what the server itself manages.
 */
export interface App extends RouteDeps, PipelineDeps {
  /** What the routes, the pipeline and the dispatch read of the configuration (the whole config, seen through their picks). */
  readonly settings: RouteSettings & PipelineSettings & DispatchSettings;
  /** The requests of this event loop: their start, those in flight, draining. */
  readonly requests: Requests;
  readonly metrics: ProxyMetrics;
  /** Where requests are counted and logged as they end, with a context or refused before one. */
  readonly ends: RequestEnds;
  readonly clients: Clients;
  /** Client keys; undefined when client authentication is off. */
  readonly clientKeys: ClientKeys | undefined;
  /** Upstream's HTTP cluster storage, served here when disagg_cluster.cluster_uri is http(s). */
  readonly clusterStorage: ClusterStorageDeps | undefined;
  /** Which Host names the routes that check it answer to. */
  readonly hosts: HostCheck;
  /** SIGHUP: the key file is read again (a broken file keeps the old keys). */
  /** Reads the client keys again: what it read, or why it kept the current ones; undefined when authentication is off. */
  reloadClientKeys(): KeysReload;
  /** Per-request perf metrics (JSONL, /perf_metrics) and span export, as configured. */
  readonly telemetry: Telemetry;
  /** TRTLLM_REQUEST_TRACE_DIR's writer; undefined when the variable is unset. */
  readonly requestTrace: RequestTraceWriter | undefined;
  /** The live status page's data; undefined with --no-dashboard. */
  readonly dashboard: DashboardRecorder | undefined;
  /** Claims the hand-offs of requests that ended before their generation leg did. */
  readonly handoffs: HandoffSettler;
  /** Ejects workers whose requests keep failing although their health checks pass. */
  readonly outliers: OutlierDetector;
}

/** What the app reads of the server around it, known only once that runs (server/serve.ts). */
export interface AppSurroundings {
  /** num_workers > 1: what this event loop shares with the others (load, admission, metrics). */
  readonly loop?: LoopShare | undefined;
  /** The port the listener bound (a requested 0 is a chosen port), once listening: /cluster_info advertises it. */
  readonly boundPort?: () => number | undefined;
  /** etcd discovery or disagg_cluster, once started: /cluster_info and the dashboard show its state. */
  readonly discovery?: () => RunningDiscovery | undefined;
}

/** The composition root: builds every collaborator of one event loop's server and wires them once. */
export function createApp(config: ProxyConfig, logger: Logger, version: string, around: AppSurroundings = {}): App {
  const { loop } = around;
  const workerFetch = createWorkerFetch(config);
  const placement = placementOf(config, logger, workerFetch, loop);
  const bodyCodec = config.workerMsgpack ? msgpackCodec() : JSON_CODEC;
  const requestTrace = config.requestTraceDir === undefined ? undefined : openRequestTrace(config.requestTraceDir, logger);
  const metrics = metricsOf(placement, requestTrace, loop);
  // GET /v1/models's `created`, as a worker gives its start time (seconds).
  const startedAt = Math.floor(Date.now() / 1000);
  const admission = admissionOf(config, loop);
  loop?.provideMetrics(() => metrics.values());
  const keys = clientKeysOf(config);
  const discoveryStatus = (): DiscoveryStatus | undefined => around.discovery?.()?.status();
  const registered = (): RegisteredWorker[] | undefined => around.discovery?.()?.registered?.();
  // With several loops the requests in flight are the process's: admission counts every loop's.
  const inFlight = loop === undefined ? () => requests.active.size : () => admission.inFlight;
  const draining = (): boolean => requests.draining;
  const clientKeysSet = (): boolean => keys.current() !== undefined;
  const dashboard = dashboardOf(config, loop, {
    version,
    placement,
    admission,
    inFlight,
    draining,
    discoveryStatus,
    registered,
    clientKeysSet,
  });
  const telemetry = telemetryOf(config, logger, version, placement, workerFetch);
  // Each loop its own process id in the snowflake (loops/event-loops.ts).
  const ids = new DisaggIdAllocator(config.nodeId, { processId: (config.processId + (loop?.index ?? 0)) % 64 });
  const traffic = dashboard ?? loop?.traffic;
  const clients = new Clients(config);
  const requests = new Requests({ schedule: config.schedule, admission, ids, metrics, telemetry, requestTrace, logger, traffic, clients });
  // One wheel for the worker calls' deadlines and every open stream's keepalive and silence.
  const deadlines = new DeadlineWheel();
  const handoffs = new HandoffSettler({ settings: config, placement, ids, logger, workerFetch, bodyCodec }, (reason, settled) =>
    metrics.handoffSettled(reason, settled),
  );
  return {
    placement,
    ids,
    logger,
    workerFetch,
    deadlines,
    bodyCodec,
    handoffs,
    telemetry,
    requestTrace,
    version,
    metrics,
    dashboard,
    outliers: placement.outliers,
    settings: config,
    requests,
    ends: requests.ends,
    clients,
    bodyLimits: { maxBytes: config.maxBodyBytes, minBytesPerSecond: config.bodyMinBytesPerSecond, graceMs: config.bodyGraceMs },
    get draining() {
      return requests.draining;
    },
    startRequest: (route, stream, client, traceInput) => requests.start(route, stream, client, traceInput),
    hosts: new HostCheck(ownNames(config)),
    clusterStorage: clusterStorageOf(config, logger, metrics),
    get clientKeys() {
      return keys.current();
    },
    reloadClientKeys: () => keys.reload(),
    traceRefused(route, headers, traced, error) {
      requestTrace?.refused({ route, headers, ...traced }, { status: error.status, code: error.code, message: error.message });
    },
    runPipeline(ctx, input) {
      ctx.modelChosen(modelNamesOf(input.routing?.model, placement.chooseModel(input.routing?.model)));
      return runPipeline(this, ctx, input);
    },
    callWorker(ctx, call) {
      const model = call.body?.["model"];
      if (typeof model === "string") ctx.modelChosen(modelNamesOf(model, placement.chooseModel(model)));
      return callOneWorker(this, ctx, call);
    },
    workersReady: () => placement.pool.isReady(),
    modelReady: (model) => modelReadyOf(placement, model),
    modelList: () => modelListOf(placement, config.modelAliases, startedAt),
    clusterInfo() {
      const server = { hostname: config.host, bind_host: config.bindHost ?? config.host, port: around.boundPort?.() ?? config.port };
      return clusterInfoOf(placement, discoveryStatus(), registered(), server);
    },
    async metricsText() {
      return { contentType: metrics.contentType, text: await (loop === undefined ? metrics.render() : loop.metricsText()) };
    },
    perfMetrics: () => telemetry.perfMetrics(),
    timings: {
      startWaitMs: config.streamStartWaitMs,
      keepaliveIntervalMs: config.keepaliveIntervalMs,
      silenceTimeoutMs: config.requestTimeoutMs,
      clock: wheelClock(deadlines),
    },
  };
}

/** Placement over the configured workers, its load-reporting changes logged once each (not per poll). */
function placementOf(config: ProxyConfig, logger: Logger, workerFetch: WorkerFetch, loop: LoopShare | undefined): Placement {
  return new Placement(config, {
    logger,
    shared: loop?.shared,
    coordinator: coordinationOf(config, logger),
    fetch: workerFetch,
    onWarning: (message, fields) => logger.warn(message, fields),
    // A worker built without iteration stats never reports.
    onLoadReporting: (origin, reporting) =>
      reporting
        ? logger.info("worker reports its load", { worker: origin })
        : logger.warn("worker reports no load (GET /prometheus/metrics): its requests are counted by this proxy alone", { worker: origin }),
  });
}

/** The Prometheus metrics, their gauges read from placement and the request trace at scrape time. */
function metricsOf(placement: Placement, requestTrace: RequestTraceWriter | undefined, loop: LoopShare | undefined): ProxyMetrics {
  return createMetrics(
    { workers: () => workerGauges(placement), models: () => modelGauges(placement), requestTrace: () => requestTrace?.counts() },
    // The process's own figures come from its main event loop only (extra loops' are summed in).
    { processMetrics: (loop?.index ?? 0) === 0 },
  );
}

/** Perf metrics and spans; /perf_metrics also asks the workers for theirs. */
function telemetryOf(config: ProxyConfig, logger: Logger, version: string, placement: Placement, workerFetch: WorkerFetch): Telemetry {
  return new Telemetry(config, {
    logger,
    version,
    workerOrigins: () => placement.pool.origins(),
    fetchWorkerPerfMetrics: (origin) => fetchWorkerPerfMetrics(workerFetch, origin, config.healthCheckTimeoutMs, config.maxAnswerBytes),
  });
}

/** With several event loops the in-flight bound is the process's: every loop's slots are counted together. */
function admissionOf(config: ProxyConfig, loop: LoopShare | undefined): AdmissionControl {
  if (loop === undefined) return new Admission(config.maxInflight, config.admissionWaitMs);
  return new SharedAdmission(config.maxInflight, config.admissionWaitMs, loop.shared.admission());
}

/** A reload of the client keys: the file read and its keys, or why the current ones were kept; undefined when authentication is off. */
export type KeysReload = { readonly file: string | undefined; readonly count: number; readonly refused?: string } | undefined;

/** The client keys (undefined: client authentication is off), read again on SIGHUP; a broken file keeps the old keys. */
function clientKeysOf(config: ProxyConfig): { current(): ClientKeys | undefined; reload(): KeysReload } {
  const read = (): ClientKeys | undefined => loadClientKeys({ file: config.apiKeyFile, env: config.apiKeysFromEnv });
  let keys = read();
  return {
    current: () => keys,
    reload() {
      try {
        keys = read();
      } catch (error) {
        const refused = error instanceof Error ? error.message : String(error);
        return keys === undefined ? undefined : { file: config.apiKeyFile, count: keys.size, refused };
      }
      return keys === undefined ? undefined : { file: config.apiKeyFile, count: keys.size };
    },
  };
}

function clusterStorageOf(config: ProxyConfig, logger: Logger, metrics: ProxyMetrics): App["clusterStorage"] {
  if (config.discovery?.kind !== "cluster" || config.discovery.storage !== "http") return undefined;
  // With a coordinator, workers register there (it serves the storage, as upstream's); this replica lists what it lists.
  if (config.disaggCoordinatorUrl !== undefined) return undefined;
  const onStall = (ms: number): void => {
    logger.warn("the proxy stalled: cluster storage TTLs extended by the stall", { stall_ms: Math.round(ms) });
    metrics.storeStalled(ms / 1000);
  };
  const access = new ClusterAccess({ allowFrom: config.clusterAllowFrom, key: config.clusterKey ?? config.internalAuthKey });
  return { store: new ClusterStore({ onStall }), access, holder: { forward: undefined } };
}

/**
 * The names the Host-checked routes answer to besides IP literals and localhost: hostname and
 * bind_host, the machine's own name (operators reach the proxy by it), the host of an http(s)
 * cluster_uri (the name workers are told to register at), and --allowed-host.
 */
function ownNames(config: ProxyConfig): string[] {
  const names = [config.host, hostname(), ...config.allowedHosts];
  if (config.bindHost !== undefined) names.push(config.bindHost);
  const discovery = config.discovery;
  if (discovery?.kind === "cluster" && discovery.storage === "http") {
    try {
      names.push(new URL(discovery.endpoint).hostname);
    } catch {
      // config/load.ts checked the URI; nothing to add otherwise.
    }
  }
  return names;
}

/** disagg_coordinator_url: the coordinator's client, and what it tells the log (one warning per outage). */
function coordinationOf(config: ProxyConfig, logger: Logger): Coordination | undefined {
  const url = config.disaggCoordinatorUrl;
  if (url === undefined) return undefined;
  return new Coordination(
    { ...config, url },
    {
      onUnreachable: (coordinator, error) =>
        logger.warn("coordinator unreachable: this proxy places every leg on its own routers until it answers again", {
          coordinator,
          error,
          retry_ms: config.coordinatorTimeoutMs,
        }),
      onBack: (coordinator) => logger.info("coordinator answers again: it places the legs of its routers", { coordinator }),
      onFinishLost: (role, reqId, error) =>
        logger.debug("coordinator finish not delivered: its reservation expires there", { role, disagg_request_id: reqId, error }),
      onUnusable: (role, server) =>
        logger.warn("the coordinator placed a leg on a worker this proxy cannot use; placed here instead", { role, worker: server }),
    },
  );
}
