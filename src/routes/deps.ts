import type { ProxyConfig } from "../config/types.ts";
import type { JsonObject, JsonValue } from "../json/json.ts";
import type { OneShotCall, WorkerReply } from "../pipeline/one-shot.ts";
import type { PipelineInput, PipelineOutcome } from "../pipeline/types.ts";
import type { RequestContext } from "../request/context.ts";
import type { StreamTimings } from "../streaming/stream-request.ts";
import type { BodyLimits } from "./client-body.ts";
import type { ClusterStore } from "../discovery/index.ts";
import type { Logger } from "../observability/logger.ts";
import type { TraceInput } from "../request/requests.ts";
import type { ClusterAccess } from "../security/cluster-access.ts";
import type { ProxyError } from "../errors.ts";

/** The settings the routes read. */
export type RouteSettings = Pick<ProxyConfig, "maxSseEventBytes" | "allowRequestChatTemplate" | "subagentAffinityHeader">;

/**
 * What the routes need, declared by them and implemented by the server (server/app.ts): the
 * routes import nothing from server/, and see no worker pool, placement or fetch.
 */
export interface RouteDeps {
  readonly version: string;
  readonly settings: RouteSettings;
  readonly bodyLimits: BodyLimits;
  readonly timings: StreamTimings;
  readonly draining: boolean;
  /**
   * Admits a client request that passed validation and starts its one context: refused
   * while draining (503) or over the in-flight limit (429). The caller owns its end. With
   * `traced`, an accepted request is recorded in the request trace when one is written (it is
   * called only then). A free slot gives the context at once (it may also throw at once).
   */
  startRequest(route: string, stream: boolean, client: Request, traced?: () => TraceInput): RequestContext | Promise<RequestContext>;
  /**
   * A model request refused before admission, its body read: recorded in the request trace
   * when one is written (as upstream records a body refused by validation).
   */
  traceRefused?(route: string, headers: Headers, traced: TraceInput, error: ProxyError): void;
  /** The disaggregated pipeline for a started request. */
  runPipeline(ctx: RequestContext, input: PipelineInput): Promise<PipelineOutcome>;
  /** One worker call for a started request, placed and reserved like a leg. */
  callWorker(ctx: RequestContext, call: OneShotCall): Promise<WorkerReply>;
  /** A context and a generation worker are ready. */
  workersReady(): boolean;
  /** A context and a generation worker serving this model (or the model it is an alias of) are ready. */
  modelReady(model: string): boolean;
  /** GET /v1/models's body when the proxy answers it (several models, or aliases); undefined: a worker answers. */
  modelList(): JsonObject | undefined;
  /** GET /cluster_info's body. */
  clusterInfo(): JsonObject;
  /** Prometheus text exposition. */
  metricsText(): Promise<{ readonly contentType: string; readonly text: string }>;
  /** GET /perf_metrics's body. */
  perfMetrics(): Promise<JsonValue>;
  /** Upstream's HTTP cluster storage, when disagg_cluster.cluster_uri is http(s); undefined otherwise. */
  readonly clusterStorage: ClusterStorageDeps | undefined;
  /** For the few lines a route writes itself (cluster storage refusals). */
  readonly logger: Logger;
}

/** The store and who may use it. */
export interface ClusterStorageDeps {
  readonly store: ClusterStore;
  readonly access: ClusterAccess;
  /** Who holds the registrations: this process, or while it takes the port over, the one it replaces. */
  readonly holder?: StorageHolder;
}

/** One cluster storage call as it came (after its caller was checked), to be answered by the process holding the registrations. */
export interface StorageCall {
  readonly method: string;
  /** Path and query, e.g. `/expire?key=k&ttl=10`. */
  readonly target: string;
  readonly body?: string | undefined;
  /** The caller's address (a registration remembers it). */
  readonly from?: string | undefined;
}

export interface StorageAnswer {
  readonly status: number;
  readonly body: string;
}

/**
 * While set, each call goes to the process that holds the registrations (the one this process
 * takes the port over from, process/take-over-ready.ts); its answer undefined: answer here.
 */
export interface StorageHolder {
  forward: ((call: StorageCall) => Promise<StorageAnswer | undefined>) | undefined;
}

/** The server's idle bound on a request's connection, once lifted (Connection.keepOpen). */
export interface IdleBound {
  /** Puts the bound back; the route calls it when its request ends. */
  restore(): void;
}

/** What a route may know and do about the connection its request came on, as one object (methods: no closures per request). */
export interface Connection {
  /**
   * Lifts the server's idle timeout for this request: a route calls it once the client's body
   * is in, so a prefill may keep the request silent for minutes while a client trickling its
   * body (slowloris) is still cut. The runtime keeps a lifted timeout on the connection for
   * later idle periods (server/keep-alive.ts), so the route restores it when its request ends.
   * Calling it again returns the same bound.
   */
  keepOpen(): IdleBound;
  /** The client's address, looked up only when a route asks. */
  peer(): string | undefined;
}

export type Handler = (deps: RouteDeps, request: Request, connection: Connection) => Response | Promise<Response>;
