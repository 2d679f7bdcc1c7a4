import { hostname } from "node:os";
import type { ProxyConfig } from "../config/types.ts";
import { ProxyError } from "../errors.ts";
import type { Logger } from "../observability/logger.ts";
import type { PipelineDeps } from "../pipeline/types.ts";
import { RequestContext, type RequestHooks } from "../request/context.ts";
import { DisaggIdAllocator } from "../request/disagg-id.ts";
import { modelNamesOf } from "../routing/model-choice.ts";
import { Placement } from "../routing/placement.ts";
import { Coordination } from "../routing/coordination.ts";
import { createWorkerFetch } from "../workers/transport.ts";
import { JSON_CODEC, msgpackCodec } from "../workers/body-codec.ts";
import { fetchWorkerPerfMetrics } from "../workers/perf-metrics-fetch.ts";
import { Telemetry } from "../observability/telemetry.ts";
import { ClusterStore, type DiscoveryStatus, type RegisteredWorker } from "../discovery/index.ts";
import { ClusterAccess } from "../security/cluster-access.ts";
import { HostCheck } from "../security/browser-guard.ts";
import { createMetrics, type ProxyMetrics } from "../observability/metrics.ts";
import { loadClientKeys, type ClientKeys } from "../security/api-keys.ts";
import type { RouteDeps } from "../routes/deps.ts";
import { runPipeline } from "../pipeline/orchestrate.ts";
import { callOneWorker } from "../pipeline/one-shot.ts";
import { HandoffSettler } from "../pipeline/handoff/settler.ts";
import { OutlierDetector } from "../workers/outlier-detector.ts";
import { clusterInfoOf } from "./cluster-info.ts";
import { modelListOf, modelReadyOf } from "./model-list.ts";
import { Admission, SharedAdmission, type AdmissionControl } from "../request/admission.ts";
import type { LoopShare } from "./loop-share.ts";
import { metricsHooks, modelGauges, workerGauges } from "../request/metrics-hooks.ts";
import { DashboardRecorder } from "../dashboard/recorder.ts";
import { dashboardSource } from "./dashboard-source.ts";
import { requestEnds, type RequestEnds } from "../request/request-end.ts";
import { openRequestTrace, type RequestTraceWriter, type TraceEnd } from "../observability/request-trace.ts";
import type { RequestSummary } from "../request/context.ts";
import type { TraceInput } from "../routes/deps.ts";

/** How a request ended, as its trace's terminal line records it. */
function traceEndOf(summary: RequestSummary): TraceEnd {
  return {
    httpStatus: summary.status,
    errorCode: summary.errorCode,
    outcome: summary.outcome,
    message: summary.error,
    disaggRequestId: summary.disaggRequestId,
  };
}

function drainingError(): ProxyError {
  return new ProxyError("DRAINING", 503, "The proxy is shutting down; retry on another replica");
}

/**
 * The server's own state, built once per server (no module state): what the routes declared
 * they need (RouteDeps), the pipeline's dependencies, and what the server itself manages.
 */
export interface App extends RouteDeps, PipelineDeps {
  /** Requests between validation and their end. */
  readonly active: ReadonlySet<RequestContext>;
  readonly metrics: ProxyMetrics;
  /** Where requests are counted and logged as they end, with a context or refused before one. */
  readonly ends: RequestEnds;
  /** Client keys; undefined when client authentication is off. */
  readonly clientKeys: ClientKeys | undefined;
  /** etcd discovery's connection state, when workers are discovered (shown by /cluster_info). */
  discoveryStatus: (() => DiscoveryStatus) | undefined;
  /** disagg_cluster's registered workers (upstream's current_workers), when a cluster is configured. */
  discoveredWorkers: (() => RegisteredWorker[]) | undefined;
  /** The port the listener bound (a requested 0 is a chosen port), once listening: /cluster_info advertises it with `hostname`. */
  boundPort: number | undefined;
  /** Upstream's HTTP cluster storage, served here when disagg_cluster.cluster_uri is http(s). */
  readonly clusterStorage: { readonly store: ClusterStore; readonly access: ClusterAccess } | undefined;
  /** Which Host names the routes that check it answer to. */
  readonly hosts: HostCheck;
  /** SIGHUP: the key file is read again (a broken file keeps the old keys). */
  reloadClientKeys(): void;
  /** From now on new requests are refused with 503 and Retry-After. */
  startDraining(): void;
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

/** `loop`: with num_workers > 1, what this event loop shares with the others (load, admission, metrics). */
export function createApp(config: ProxyConfig, logger: Logger, version: string, loop?: LoopShare): App {
  const workerFetch = createWorkerFetch({
    caFile: config.workerCaFile,
    apiKey: config.workerApiKey,
    keepAliveMs: config.workerKeepAliveMs,
  });
  const placement = new Placement(config, {
    shared: loop?.shared,
    coordinator: coordinationOf(config, logger),
    fetch: workerFetch,
    onWarning: (message, fields) => logger.warn(message, fields),
    // Once per change, not per poll: a worker built without iteration stats never reports.
    onLoadReporting: (origin, reporting) =>
      reporting
        ? logger.info("worker reports its load", { worker: origin })
        : logger.warn("worker reports no load (GET /prometheus/metrics): its requests are counted by this proxy alone", { worker: origin }),
  });
  // Each loop its own process id in the snowflake (loops/event-loops.ts).
  const ids = new DisaggIdAllocator(config.nodeId, { processId: (config.processId + (loop?.index ?? 0)) % 64 });
  const active = new Set<RequestContext>();
  const bodyCodec = config.workerMsgpack ? msgpackCodec() : JSON_CODEC;
  const requestTrace = config.requestTraceDir === undefined ? undefined : openRequestTrace(config.requestTraceDir, logger);
  const metrics = createMetrics({
    workers: () => workerGauges(placement),
    models: () => modelGauges(placement),
    requestTrace: () => requestTrace?.counts(),
  });
  // GET /v1/models's `created`, as a worker gives its start time (seconds).
  const startedAt = Math.floor(Date.now() / 1000);
  const admission: AdmissionControl =
    loop === undefined
      ? new Admission(config.maxInflight, config.admissionWaitMs)
      : new SharedAdmission(config.maxInflight, config.admissionWaitMs, loop.shared.admission());
  loop?.provideMetrics(() => metrics.values());
  let draining = false;
  let discoveryStatus: (() => DiscoveryStatus) | undefined;
  let discoveredWorkers: (() => RegisteredWorker[]) | undefined;
  let boundPort: number | undefined;
  // An extra event loop keeps no recorder: its traffic goes to the main loop's (loop-dashboard.ts).
  // With several loops the requests in flight are the process's: admission counts every loop's.
  const inFlight = loop === undefined ? () => active.size : () => admission.inFlight;
  const dashboard =
    config.dashboard && loop?.traffic === undefined
      ? new DashboardRecorder(
          dashboardSource({
            config,
            version,
            placement,
            admission,
            inFlight,
            draining: () => draining,
            discoveryStatus: () => discoveryStatus?.(),
            registered: () => discoveredWorkers?.(),
            clientKeysSet: () => clientKeys !== undefined,
          }),
        )
      : undefined;
  const traffic = dashboard ?? loop?.traffic;
  const ends = requestEnds(metrics, logger, traffic);
  const handoffs = new HandoffSettler({ config, placement, logger, workerFetch, bodyCodec }, (reason, settled) =>
    metrics.handoffSettled(reason, settled),
  );
  const hooksByRoute = new Map<string, RequestHooks>();
  const readKeys = (): ClientKeys | undefined => loadClientKeys({ file: config.apiKeyFile, env: config.apiKeysFromEnv });
  let clientKeys = readKeys();
  const telemetry = new Telemetry(config, {
    logger,
    version,
    workerOrigins: () => placement.pool.origins(),
    fetchWorkerPerfMetrics: (origin) => fetchWorkerPerfMetrics(workerFetch, origin, config.healthCheckTimeoutMs, config.maxAnswerBytes),
  });
  return {
    config,
    placement,
    ids,
    logger,
    workerFetch,
    bodyCodec,
    handoffs,
    outliers: new OutlierDetector(placement.pool, config, logger),
    telemetry,
    requestTrace,
    version,
    settings: config,
    active,
    metrics,
    ends,
    bodyLimits: { maxBytes: config.maxBodyBytes, minBytesPerSecond: config.bodyMinBytesPerSecond, graceMs: config.bodyGraceMs },
    get draining() {
      return draining;
    },
    get discoveryStatus() {
      return discoveryStatus;
    },
    set discoveryStatus(status) {
      discoveryStatus = status;
    },
    dashboard,
    get discoveredWorkers() {
      return discoveredWorkers;
    },
    set discoveredWorkers(workers) {
      discoveredWorkers = workers;
    },
    hosts: new HostCheck(ownNames(config)),
    get boundPort() {
      return boundPort;
    },
    set boundPort(port) {
      boundPort = port;
    },
    clusterStorage:
      config.discovery?.kind === "cluster" && config.discovery.storage === "http"
        ? {
            store: new ClusterStore({
              onStall: (ms) => {
                logger.warn("the proxy stalled: cluster storage TTLs extended by the stall", { stall_ms: Math.round(ms) });
                metrics.storeStalled(ms / 1000);
              },
            }),
            access: new ClusterAccess({ allowFrom: config.clusterAllowFrom, key: config.clusterKey ?? config.internalAuthKey }),
          }
        : undefined,
    get clientKeys() {
      return clientKeys;
    },
    reloadClientKeys() {
      try {
        clientKeys = readKeys();
      } catch (error) {
        logger.error("client key reload failed: keeping the current keys", { error });
      }
    },
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
      const server = { hostname: config.host, bind_host: config.bindHost ?? config.host, port: boundPort ?? config.port };
      return clusterInfoOf(placement, this.discoveryStatus?.(), this.discoveredWorkers?.(), server);
    },
    async metricsText() {
      return { contentType: metrics.contentType, text: await (loop === undefined ? metrics.render() : loop.metricsText()) };
    },
    perfMetrics: () => telemetry.perfMetrics(),
    timings: {
      startWaitMs: config.streamStartWaitMs,
      keepaliveIntervalMs: config.keepaliveIntervalMs,
      silenceTimeoutMs: config.requestTimeoutMs,
    },
    startDraining() {
      draining = true;
    },
    async startRequest(route, stream, client, traceInput) {
      if (draining) throw drainingError();
      const release = await admission.acquire(client.signal);
      if (draining) {
        release();
        throw drainingError();
      }
      try {
        metrics.requestAccepted(route, stream);
        const ctx = contextFor(route, stream, client, release, traceInput);
        active.add(ctx);
        return ctx;
      } catch (error) {
        release();
        throw error;
      }
    },
  };

  // One set of hooks per route, shared by its requests: they hold nothing of a request.
  function hooksOf(route: string): RequestHooks {
    let hooks = hooksByRoute.get(route);
    if (hooks === undefined) {
      hooks = metricsHooks(metrics, route, traffic);
      hooksByRoute.set(route, hooks);
    }
    return hooks;
  }

  function contextFor(
    route: string,
    stream: boolean,
    client: Request,
    release: () => void,
    traceInput: (() => TraceInput) | undefined,
  ): RequestContext {
    const trace = telemetry.traceFor(client.headers);
    const traced =
      traceInput === undefined || requestTrace === undefined
        ? undefined
        : requestTrace.accepted({ route, headers: client.headers, ...traceInput() });
    const ctx: RequestContext = new RequestContext({
      disaggRequestId: ids.next(),
      route,
      stream,
      schedule: config.schedule,
      trace,
      hooks: hooksOf(route),
      perf: telemetry.perfFor(client.headers),
      spans: telemetry.spansFor(trace, route),
      traced,
      releaseAdmission: release,
      onEnd: (summary) => {
        active.delete(ctx);
        if (traced !== undefined) requestTrace?.finished(traced, traceEndOf(summary));
        telemetry.finished({ ...summary, perf: ctx.perf, ok: summary.outcome === "ok" });
        ctx.spans.end(summary);
        ends.finished(summary);
      },
    });
    return ctx;
  }
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
