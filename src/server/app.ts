import type { ProxyConfig } from "../config/types.ts";
import { ProxyError } from "../errors.ts";
import type { Logger } from "../observability/logger.ts";
import type { PipelineDeps } from "../pipeline/types.ts";
import { RequestContext } from "../request/context.ts";
import { DisaggIdAllocator } from "../request/disagg-id.ts";
import { Placement } from "../routing/placement.ts";
import type { StreamTimings } from "../streaming/early-stream.ts";
import { createWorkerFetch } from "../workers/transport.ts";
import { JSON_CODEC, msgpackCodec } from "../workers/body-codec.ts";
import { fetchWorkerPerfMetrics } from "../workers/perf-metrics-fetch.ts";
import { Telemetry } from "../observability/telemetry.ts";
import type { DiscoveryStatus } from "../discovery/index.ts";
import { createMetrics, type ProxyMetrics } from "../observability/metrics.ts";
import { loadClientKeys, type ClientKeys } from "../security/api-keys.ts";
import type { BodyLimits } from "../routes/client-body.ts";
import { Admission } from "./admission.ts";
import { metricsHooks, workerGauges } from "./metrics-hooks.ts";
import { logRequest } from "./request-log.ts";

function drainingError(): ProxyError {
  return new ProxyError("DRAINING", 503, "The proxy is shutting down; retry on another replica");
}

/** Seconds a refused client is told to wait before trying again (draining, overload). */
export const RETRY_AFTER_S = 5;

/** Everything a route needs, built once per server and passed in (no module state). */
export interface App extends PipelineDeps {
  readonly timings: StreamTimings;
  readonly version: string;
  /** Requests between validation and their end. */
  readonly active: ReadonlySet<RequestContext>;
  readonly draining: boolean;
  readonly metrics: ProxyMetrics;
  readonly bodyLimits: BodyLimits;
  /** Client keys; undefined when client authentication is off. */
  readonly clientKeys: ClientKeys | undefined;
  /** etcd discovery's connection state, when workers are discovered (shown by /cluster_info). */
  discoveryStatus: (() => DiscoveryStatus) | undefined;
  /** SIGHUP: the key file is read again (a broken file keeps the old keys). */
  reloadClientKeys(): void;
  /**
   * Admits a client request that passed validation and starts its one context: refused
   * while draining (503) or over the in-flight limit (429).
   */
  startRequest(route: string, stream: boolean, client: Request): Promise<RequestContext>;
  /** From now on new requests are refused with 503 and Retry-After. */
  startDraining(): void;
  /** Per-request perf metrics (JSONL, /perf_metrics) and span export, as configured. */
  readonly telemetry: Telemetry;
}

export function createApp(config: ProxyConfig, logger: Logger, version: string): App {
  const workerFetch = createWorkerFetch({ caFile: config.workerCaFile, apiKey: config.workerApiKey });
  const placement = new Placement(config, { fetch: workerFetch, onWarning: (message, fields) => logger.warn(message, fields) });
  const ids = new DisaggIdAllocator(config.nodeId, { processId: config.processId });
  const active = new Set<RequestContext>();
  const metrics = createMetrics({ workers: () => workerGauges(placement) });
  const admission = new Admission(config.maxInflight, config.admissionWaitMs);
  let draining = false;
  const readKeys = (): ClientKeys | undefined => loadClientKeys({ file: config.apiKeyFile, env: config.apiKeysFromEnv });
  let clientKeys = readKeys();
  const telemetry = new Telemetry(config, {
    logger,
    version,
    workerOrigins: () => placement.pool.origins(),
    fetchWorkerPerfMetrics: (origin) => fetchWorkerPerfMetrics(workerFetch, origin, config.healthCheckTimeoutMs),
  });
  return {
    config,
    placement,
    ids,
    logger,
    workerFetch,
    bodyCodec: config.workerMsgpack ? msgpackCodec() : JSON_CODEC,
    telemetry,
    version,
    active,
    metrics,
    bodyLimits: { maxBytes: config.maxBodyBytes, minBytesPerSecond: config.bodyMinBytesPerSecond, graceMs: config.bodyGraceMs },
    get draining() {
      return draining;
    },
    discoveryStatus: undefined,
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
    timings: {
      startWaitMs: config.streamStartWaitMs,
      keepaliveIntervalMs: config.keepaliveIntervalMs,
      silenceTimeoutMs: config.requestTimeoutMs,
    },
    startDraining() {
      draining = true;
    },
    async startRequest(route, stream, client) {
      if (draining) throw drainingError();
      const release = await admission.acquire(client.signal);
      if (draining) {
        release();
        throw drainingError();
      }
      metrics.requestAccepted(route, stream);
      const trace = telemetry.traceFor(client.headers);
      const ctx: RequestContext = new RequestContext({
        disaggRequestId: ids.next(),
        route,
        stream,
        schedule: config.schedule,
        trace,
        hooks: metricsHooks(metrics, route),
        perf: telemetry.perfFor(client.headers),
        spans: telemetry.spansFor(trace, route),
        onEnd: (summary) => {
          active.delete(ctx);
          release();
          const { perf, contextWorker, generationWorker } = ctx;
          telemetry.finished({ ...summary, perf, contextWorker, generationWorker, ok: summary.outcome === "ok" });
          ctx.spans.end(summary);
          metrics.requestEnded(route, summary.outcome, summary.status);
          if (summary.outcome === "client_disconnected") metrics.clientDisconnected(route);
          logRequest(logger, summary);
        },
      });
      active.add(ctx);
      return ctx;
    },
  };
}
