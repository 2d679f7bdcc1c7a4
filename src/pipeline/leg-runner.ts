import type { Role } from "../config/types.ts";
import { asProxyError, type ProxyError } from "../errors.ts";
import { RETURN_METRICS_HEADER } from "../observability/perf-format.ts";
import type { LegSpan } from "../observability/request-spans.ts";
import { legTraceHeaders } from "../observability/trace-context.ts";
import type { RequestContext } from "../request/context.ts";
import type { Placed } from "../routing/placement.ts";
import type { RoutingRequest } from "../routing/routing-request.ts";
import { pause } from "../timers.ts";
import type { JsonObject } from "../json/json.ts";
import type { JsonSource } from "../json/json-source.ts";
import type { BodyCodec, WorkerBody } from "../workers/body-codec.ts";
import type { Capability } from "../workers/protocol.ts";
import type { WorkerEntry } from "../workers/worker-pool.ts";
import { outlierFailureOf } from "../workers/outlier-detector.ts";
import { fetchAnswer, postForJson, postForStream, type JsonAnswer, type RawAnswer, type WorkerPost } from "../workers/client.ts";
import { affinityHeaders, type Affinity } from "./affinity.ts";
import { dropRejectedField, fitToWorker } from "./protocol-fit.ts";
import { watchedCall, type HandoffWatch } from "./handoff/watch.ts";
import { lostUnread, neverReachedEngine, workerStarting } from "./retry.ts";
import type { PipelineDeps } from "./types.ts";

/** One upstream leg: which worker, which body under which id, what may be retried. */
export interface LegPlan {
  readonly role: Role;
  readonly path: string;
  /** The paired leg's worker, never used for this leg. */
  readonly exclude: string | undefined;
  /** A worker already chosen for the first attempt (generation-first picks the context worker early). */
  readonly first: Placed | undefined;
  /** Retries stay on the first worker (a generation-first hand-off names it). */
  readonly pinned: boolean;
  /** What the routers know of the request; learning routers hear how each attempt ended. */
  readonly routing: RoutingRequest;
  readonly signal: AbortSignal;
  readonly retryable: (error: ProxyError) => boolean;
  /** Headers every attempt carries besides the trace (the internal HMAC, the body's encoding). */
  readonly headers: Readonly<Record<string, string>>;
  /** The disagg_request_id of the first attempt. */
  readonly id: bigint;
  /** A retry is sent under a fresh id (a context retry), else under `id` again. */
  readonly freshIdOnRetry: boolean;
  /**
   * The body of an attempt sent under `id`, as the newest worker takes it: each attempt's
   * worker is sent it cut to its protocol (protocol-fit.ts), then encoded with `codec`.
   */
  readonly body: (id: bigint) => JsonObject;
  readonly codec: BodyCodec;
  /** The client's body bytes, whose unchanged members the codec may send as they came. */
  readonly source?: JsonSource | undefined;
  /** Sub-agent affinity: signed per attempt, as the signature covers the attempt's id. */
  readonly affinity: Affinity | undefined;
  /** Only workers with this capability take the leg (a disaggregated Responses request). */
  readonly requires?: Capability | undefined;
  /** A streamed generation leg's bound on its wait for headers (before its first token); 0 or unset: the request timeout. */
  readonly firstTokenTimeoutMs?: number | undefined;
  /** Workers to prefer not to use (a restarted request's failed generation worker). */
  readonly avoid?: readonly string[] | undefined;
  /** A leg of a context-first hand-off (its context leg, its generation leg): whether it reached a worker, and who takes over an attempt the request's end leaves in flight. */
  readonly handoff?: HandoffWatch | undefined;
}

/** The answering attempt: its worker, the id it was sent under, and what came back. */
export interface LegResult<T> {
  readonly origin: string;
  readonly id: bigint;
  readonly result: T;
  /** A streamed attempt ends with the request; this ends it before, with its failure (once). */
  readonly endEarly?: ((error: ProxyError) => void) | undefined;
}

/** A non-streamed leg: over once the worker answered. */
export function runJsonLeg(deps: PipelineDeps, ctx: RequestContext, plan: LegPlan): Promise<LegResult<JsonAnswer>> {
  return runAttempts(deps, ctx, plan, postForJson, "answer");
}

/** A streamed leg: the worker's stream, which lasts until the request's end. */
export function runStreamLeg(deps: PipelineDeps, ctx: RequestContext, plan: LegPlan): Promise<LegResult<Response>> {
  return runAttempts(deps, ctx, plan, postForStream, "request end");
}

/** A one-shot call (GET /v1/models, count_tokens): the worker's answer as it came, any status. */
export function runOneShotLeg(
  deps: PipelineDeps,
  ctx: RequestContext,
  plan: LegPlan,
  method: "GET" | "POST",
): Promise<LegResult<RawAnswer>> {
  return runAttempts(deps, ctx, plan, (post) => fetchAnswer({ ...post, method }), "answer");
}

/** Runs a leg's attempts: placement, the call, retries; each attempt is one LegAttempt. */
async function runAttempts<T>(
  deps: PipelineDeps,
  ctx: RequestContext,
  plan: LegPlan,
  call: (post: WorkerPost) => Promise<T>,
  lastsUntil: "answer" | "request end",
): Promise<LegResult<T>> {
  const failedOn: string[] = [];
  // A worker that rejected an optional field gets one more attempt without it (a 400 ran nothing).
  let again: Placed | undefined;
  let protocolRetried = false;
  // A request a reused connection lost unread goes once more to the same worker, on a fresh
  // connection, under the same id, outside the retry budget (retry.ts, lostUnread).
  let fresh = false;
  // Retries outside --max-retries: fresh-connection resends, and workers that answered "starting".
  let freeRetries = 0;
  let lastId = plan.id;
  for (let attempt = 0; ; attempt++) {
    const id = fresh ? lastId : attempt === 0 || !plan.freshIdOnRetry ? plan.id : deps.ids.next();
    lastId = id;
    const leg = new LegAttempt(deps, ctx, plan, again ?? placeAttempt(deps, ctx, plan, attempt, failedOn), attempt, id);
    again = undefined;
    const sent = fitToWorker(plan.body(id), leg.worker.protocol.accepts);
    const reachedBefore = plan.handoff?.reached ?? false;
    const resend = fresh;
    try {
      const post = leg.post(plan, plan.codec.encode(sent, plan.source), fresh);
      fresh = false;
      const result = await (plan.handoff === undefined ? call(post) : watchedCall(call, post, plan.signal, plan.handoff, id));
      // A streamed leg lasts until the request's end, which completes it.
      if (lastsUntil === "answer") {
        leg.answered();
        return { origin: leg.origin, id, result };
      }
      return { origin: leg.origin, id, result, endEarly: leg.endsWithRequest() };
    } catch (thrown) {
      const error = asProxyError(thrown);
      if (plan.handoff !== undefined && neverReachedEngine(error)) plan.handoff.reached = reachedBefore;
      if (lostUnread(error) && !plan.signal.aborted) {
        leg.lostUnread(error);
        ctx.retried();
        fresh = true;
        freeRetries++;
        again = deps.placement.reserveAgain(plan.role, ctx.disaggRequestId, leg.worker, plan.routing);
        continue;
      }
      if (workerStarting(error) && !plan.signal.aborted) {
        leg.answeredStarting(plan.pinned);
        // A pinned leg cannot move: it fails, and its request restarts on a fresh pair (retry.ts).
        if (plan.pinned) {
          leg.failed(error, undefined);
          throw error;
        }
        leg.movesOn(error);
        ctx.retried();
        freeRetries++;
        failedOn.push(leg.origin);
        continue;
      }
      if (!protocolRetried && !plan.signal.aborted && dropRejectedField(deps.logger, leg.worker, error, sent, plan.path)) {
        protocolRetried = true;
        leg.failed(error, attempt + 1);
        ctx.retried();
        again = deps.placement.reserveAgain(plan.role, ctx.disaggRequestId, leg.worker, plan.routing);
        continue;
      }
      const last = attempt - freeRetries >= deps.config.maxRetries || plan.signal.aborted || !plan.retryable(error);
      // Stopped by the request's end or its paired leg's failure (generation-first aborts the
      // pair with that failure): nothing said of this worker.
      // Nor a non-streamed generation cut by the timeout of the whole call (outputLengthTimeout),
      // nor a resend's 5xx on a generation leg (resentAfterPull).
      const saysNothing =
        plan.signal.aborted ||
        (lastsUntil === "answer" && outputLengthTimeout(plan.role, error)) ||
        (resend && resentAfterPull(plan.role, error));
      leg.failed(error, last ? undefined : attempt + 1, saysNothing);
      if (last) throw error;
      failedOn.push(leg.origin);
      ctx.retried();
      await pause(deps.config.retryDelayMs, plan.signal);
    }
  }
}

/**
 * One attempt of a leg, from its placement to its end: the reservation, the span, the routers'
 * learning and the metrics, completed in one place whichever way it ends.
 *
 * A streamed attempt lives as long as its stream, so it keeps only what its end needs: not the
 * plan, whose body closure holds the whole worker body (the client's prompt among it), and the
 * routing request (the prompt's text) only when a router learns from it.
 */
class LegAttempt {
  readonly origin: string;
  readonly worker: WorkerEntry;
  readonly #deps: PipelineDeps;
  readonly #ctx: RequestContext;
  readonly #role: Role;
  readonly #routing: RoutingRequest | undefined;
  readonly #placed: Placed;
  readonly #span: LegSpan;
  readonly #id: bigint;
  readonly #startedMs: number;

  constructor(deps: PipelineDeps, ctx: RequestContext, plan: LegPlan, placed: Placed, attempt: number, id: bigint) {
    this.#deps = deps;
    this.#ctx = ctx;
    this.#role = plan.role;
    this.#routing = deps.placement.learns(plan.role) ? plan.routing : undefined;
    this.#placed = { worker: placed.worker, reservation: ctx.hold(placed.reservation) };
    this.origin = placed.worker.origin;
    this.worker = placed.worker;
    this.#id = id;
    this.#startedMs = ctx.elapsedMs();
    ctx.hooks.legAttempt(plan.role, this.origin);
    this.#span = ctx.spans.startLeg({ role: plan.role, origin: this.origin, path: plan.path, attempt, disaggRequestId: id });
  }

  post(plan: LegPlan, body: WorkerBody, fresh: boolean): WorkerPost {
    const { ctx, deps } = { ctx: this.#ctx, deps: this.#deps };
    const headers: Record<string, string> = {
      ...plan.headers,
      ...affinityHeaders(deps.config.internalAuthKey, plan.affinity, plan.role, this.#id),
      ...legTraceHeaders(ctx.trace, this.#span.spanId),
    };
    // Workers are asked for their metrics only when this request's are collected (§5.3).
    if (ctx.perf !== undefined) headers[RETURN_METRICS_HEADER] = "1";
    return {
      role: plan.role,
      origin: this.origin,
      path: plan.path,
      body,
      signal: plan.signal,
      // A streamed generation leg's headers come before its first token: --first-token-timeout-ms bounds them too.
      timeoutMs:
        plan.firstTokenTimeoutMs !== undefined && plan.firstTokenTimeoutMs > 0 ? plan.firstTokenTimeoutMs : deps.config.requestTimeoutMs,
      maxAnswerBytes: deps.config.maxAnswerBytes,
      fetch: deps.workerFetch,
      headers,
      ...(fresh ? { fresh } : {}),
    };
  }

  /** A reused connection was lost before any answer: the worker is fine, and is asked again on a fresh one. */
  lostUnread(error: ProxyError): void {
    this.#placed.reservation.release();
    this.#span.end(error);
    this.#ctx.hooks.legRetry(this.#role);
    this.#deps.logger.info(`${this.#role} leg: a reused connection closed before any answer; once more on a fresh connection`, {
      disagg_request_id: this.#ctx.disaggRequestId,
      worker: this.origin,
      error: error.message,
    });
  }

  /** The worker answered its start-up 503: out of rotation until a health check passes. */
  answeredStarting(pinned: boolean): void {
    const wasReady = this.#deps.placement.pool.markStarting(this.origin);
    this.#deps.logger.info(`${this.#role} leg: the worker answered that it is starting; out of rotation until its health check passes`, {
      disagg_request_id: this.#ctx.disaggRequestId,
      worker: this.origin,
      state: "starting",
      was_ready: wasReady,
      next: pinned ? "the request restarts on a fresh pair" : "the leg goes to another worker",
    });
  }

  /** The leg leaves this worker for another, outside the retry budget (nothing was done here). */
  movesOn(error: ProxyError): void {
    this.#placed.reservation.release();
    this.#span.end(error);
    this.#ctx.hooks.legRetry(this.#role);
  }

  /** A non-streamed answer: the worker is free again. */
  answered(): void {
    this.#deps.outliers?.observed(this.#role, this.origin, undefined);
    this.#placed.reservation.release();
    this.#learn(true);
    this.#span.end();
    const seconds = (this.#ctx.elapsedMs() - this.#startedMs) / 1000;
    this.#ctx.hooks.legCompleted(this.#role, seconds, seconds, this.origin);
  }

  /** A streamed attempt: it completes when the request ends (the closure holds this attempt alone). */
  endsWithRequest(): (error: ProxyError) => void {
    let ended = false;
    const end = (error: ProxyError | undefined): void => {
      if (ended) return;
      ended = true;
      this.streamEnded(error);
    };
    this.#ctx.atEnd(end);
    return end;
  }

  /** The request whose stream this attempt served ended (its reservation goes with it). */
  streamEnded(error: ProxyError | undefined): void {
    this.#observe(error);
    this.#learn(error === undefined);
    this.#span.end(error);
    const ttftMs = this.#ctx.ttftMs;
    if (ttftMs === undefined) return;
    if (error !== undefined) {
      if (error.code !== "CLIENT_GONE") {
        this.#ctx.hooks.legFailed(this.#role, this.origin);
        this.#ctx.attemptFailed(this.origin);
      }
      return;
    }
    const seconds = (ms: number): number => (ms - this.#startedMs) / 1000;
    this.#ctx.hooks.legCompleted(this.#role, seconds(ttftMs), seconds(this.#ctx.elapsedMs()), this.origin);
  }

  /** Logs and counts a failed attempt; `retry` is the number of the retry that follows, if any; `stopped`: the proxy stopped it. */
  failed(error: ProxyError, retry: number | undefined, stopped = false): void {
    if (!stopped) this.#observe(error);
    this.#placed.reservation.release();
    this.#learn(false);
    this.#span.end(error);
    const { deps, ctx } = { deps: this.#deps, ctx: this.#ctx };
    const role = this.#role;
    if (error.code !== "CLIENT_GONE") {
      ctx.hooks.legFailed(role, this.origin);
      ctx.attemptFailed(this.origin);
    }
    if (retry !== undefined) ctx.hooks.legRetry(role);
    deps.logger.warn(`${role} leg failed`, {
      disagg_request_id: ctx.disaggRequestId,
      worker: this.origin,
      code: error.code,
      status: error.status,
      error: error.message,
      retry: retry === undefined ? undefined : `${retry} of ${deps.config.maxRetries}`,
    });
  }

  /** The outlier detector hears how the attempt ended, when it says anything of the worker. */
  #observe(error: ProxyError | undefined): void {
    if (error === undefined) {
      this.#deps.outliers?.observed(this.#role, this.origin, undefined);
      return;
    }
    const failure = outlierFailureOf(error);
    if (failure !== undefined) this.#deps.outliers?.observed(this.#role, this.origin, failure);
  }

  /** Routers that learn from placements hear how the attempt ended. */
  #learn(success: boolean): void {
    void this.#deps.placement.finished(this.#role, this.origin, this.#routing, success);
  }
}

function placeAttempt(deps: PipelineDeps, ctx: RequestContext, plan: LegPlan, attempt: number, failedOn: readonly string[]): Placed {
  if (plan.first && (attempt === 0 || plan.pinned)) {
    if (attempt === 0) return plan.first;
    return deps.placement.reserveAgain(plan.role, ctx.disaggRequestId, plan.first.worker, plan.routing);
  }
  return deps.placement.place({
    role: plan.role,
    requestKey: ctx.disaggRequestId,
    exclude: plan.exclude,
    avoid: plan.avoid === undefined ? failedOn : [...plan.avoid, ...failedOn],
    routing: plan.routing,
    requires: plan.requires,
  });
}

/**
 * A non-streamed generation call's timeout bounds the whole output, whose length the client
 * chose (max_tokens): a long answer, not a wedged worker. Counted against the worker, a client
 * asking for more than --request-timeout's worth ejected healthy generation workers (binary,
 * --request-timeout 1 and 2 s answers: both generation workers ejected in turn).
 */
export function outputLengthTimeout(role: Role, error: ProxyError): boolean {
  return role === "generation" && error.code === "WORKER_TIMEOUT";
}

/**
 * A generation request resent on a fresh connection (retry.ts, lostUnread) that the worker
 * answers with a 5xx: when a middlebox reset the first copy after forwarding it whole, that
 * copy pulled the KV, and the resend's KV transfer fails (a 500) on a healthy worker. Which of
 * the two it was cannot be told from the answer, so a resend's 5xx counts toward no ejection;
 * a worker failing so for its own reasons still fails its other requests.
 */
export function resentAfterPull(role: Role, error: ProxyError): boolean {
  return role === "generation" && error.code === "WORKER_HTTP_ERROR" && error.status >= 500;
}
