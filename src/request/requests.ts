import { ProxyError } from "../errors.ts";
import { waitUntil } from "../timers.ts";
import type { Logger } from "../observability/logger.ts";
import type { ProxyMetrics } from "../observability/metrics.ts";
import type { RequestTraceWriter, TracedRequestInput, TraceEnd } from "../observability/request-trace.ts";
import type { Telemetry } from "../observability/telemetry.ts";
import type { TrafficObserver } from "../observability/traffic-observer.ts";
import type { AdmissionControl } from "./admission.ts";
import type { Clients } from "./client-address.ts";
import { RequestContext } from "./context.ts";
import type { RequestHooks, RequestSummary } from "./reports.ts";
import type { DisaggIdAllocator } from "./disagg-id.ts";
import { metricsHooks } from "./metrics-hooks.ts";
import { requestEnds, type RequestEnds } from "./request-end.ts";

/** After the drain timeout, requests still in flight get this long to write their in-band error. */
const ABORT_GRACE_MS = 1000;

/** What a request trace records of a request beside its route and headers (which the start adds). */
export type TraceInput = Omit<TracedRequestInput, "route" | "headers">;

/** What a request's start and end use, built once per event loop by the composition root (server/app.ts). */
export interface RequestsParts {
  /** The schedule every request's log line names (--schedule). */
  readonly schedule: string;
  /** The in-flight bound (--max-inflight): one slot per request, from its start to its end. */
  readonly admission: AdmissionControl;
  readonly ids: DisaggIdAllocator;
  readonly metrics: ProxyMetrics;
  readonly telemetry: Pick<Telemetry, "traceFor" | "perfFor" | "spansFor" | "finished">;
  /** TRTLLM_REQUEST_TRACE_DIR's writer; undefined when the variable is unset. */
  readonly requestTrace: RequestTraceWriter | undefined;
  readonly logger: Logger;
  /** The dashboard (or the main loop's, from an extra loop): hears every request's leg events and end. */
  readonly traffic: TrafficObserver | undefined;
  /** Who sent each request (--trusted-proxy). */
  readonly clients: Clients;
}

/**
 * The requests of one event loop: each one's start (draining and admission checked, ids and
 * context made, counted in `active`) and the fan-out of its one end to the trace, telemetry,
 * spans, metrics, log and dashboard.
 */
export class Requests {
  readonly #active = new Set<RequestContext>();
  readonly #hooksByRoute = new Map<string, RequestHooks>();
  readonly #parts: RequestsParts;
  /** Where requests are counted and logged as they end, with a context or refused before one. */
  readonly ends: RequestEnds;
  /** Every request's end, one function for all (a closure per request lived as long as the request). */
  readonly #onEnd: (summary: RequestSummary, ctx: RequestContext) => void;
  #draining = false;

  constructor(parts: RequestsParts) {
    this.#parts = parts;
    this.ends = requestEnds(parts.metrics, parts.logger, parts.traffic);
    this.#onEnd = (summary, ctx) => this.#ended(summary, ctx);
  }

  /** Requests between their start and their end. */
  get active(): ReadonlySet<RequestContext> {
    return this.#active;
  }

  get draining(): boolean {
    return this.#draining;
  }

  /** From now on new requests are refused with 503 (and Retry-After). */
  startDraining(): void {
    this.#draining = true;
  }

  /** Resolves once no request is in flight, or after `timeoutMs`. */
  settled(timeoutMs: number): Promise<void> {
    return waitUntil(() => this.#active.size === 0, timeoutMs);
  }

  /** After a drain timeout: the requests left end with the usual in-band error, given ABORT_GRACE_MS to write it. */
  async abortLeft(): Promise<void> {
    this.#parts.logger.warn("drain timeout: aborting in-flight requests", { in_flight: this.#active.size });
    const reason = new ProxyError("DRAINING", 503, "The proxy shut down before the request finished");
    for (const ctx of this.#active) ctx.abortLegs(reason);
    await this.settled(ABORT_GRACE_MS);
  }

  /**
   * Admits a request that passed validation and starts its one context: refused while draining
   * (503) or over the in-flight limit (429). With `traceInput`, it is recorded in the request
   * trace when one is written. A free slot starts it in the same turn (no promise); one waited
   * for, once it is given.
   */
  start(route: string, stream: boolean, client: Request, traceInput?: () => TraceInput): RequestContext | Promise<RequestContext> {
    if (this.#draining) throw drainingError();
    const release = this.#parts.admission.tryAcquire();
    if (release !== undefined) return this.#admitted(route, stream, client, release, traceInput);
    return this.#parts.admission.acquire(client.signal).then((waited) => this.#admitted(route, stream, client, waited, traceInput));
  }

  #admitted(
    route: string,
    stream: boolean,
    client: Request,
    release: () => void,
    traceInput: (() => TraceInput) | undefined,
  ): RequestContext {
    if (this.#draining) {
      release();
      throw drainingError();
    }
    try {
      this.#parts.metrics.requestAccepted(route, stream);
      const ctx = this.#contextFor(route, stream, client, release, traceInput);
      this.#active.add(ctx);
      return ctx;
    } catch (error) {
      release();
      throw error;
    }
  }

  #contextFor(
    route: string,
    stream: boolean,
    client: Request,
    release: () => void,
    traceInput: (() => TraceInput) | undefined,
  ): RequestContext {
    const { telemetry, requestTrace } = this.#parts;
    const trace = telemetry.traceFor(client.headers);
    const traced =
      traceInput === undefined || requestTrace === undefined
        ? undefined
        : requestTrace.accepted({ route, headers: client.headers, ...traceInput() });
    return new RequestContext({
      disaggRequestId: this.#parts.ids.next(),
      route,
      stream,
      schedule: this.#parts.schedule,
      trace,
      hooks: this.#hooksOf(route),
      perf: telemetry.perfFor(client.headers),
      spans: telemetry.spansFor(trace, route),
      traced,
      releaseAdmission: release,
      client: this.#parts.clients.of(client),
      onEnd: this.#onEnd,
    });
  }

  /** The fan-out of a request's one end. */
  #ended(summary: RequestSummary, ctx: RequestContext): void {
    const { telemetry, requestTrace } = this.#parts;
    this.#active.delete(ctx);
    if (ctx.traced !== undefined) requestTrace?.finished(ctx.traced, traceEndOf(summary));
    telemetry.finished(summary, ctx.perf);
    ctx.spans.end(summary);
    this.ends.finished(summary);
  }

  /** One set of hooks per route, shared by its requests: they hold nothing of a request. */
  #hooksOf(route: string): RequestHooks {
    let hooks = this.#hooksByRoute.get(route);
    if (hooks === undefined) {
      hooks = metricsHooks(this.#parts.metrics, route, this.#parts.traffic);
      this.#hooksByRoute.set(route, hooks);
    }
    return hooks;
  }
}

function drainingError(): ProxyError {
  return new ProxyError("DRAINING", 503, "The proxy is shutting down; retry on another replica");
}

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
