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
import { dropField, fitToWorker, rejectedField } from "./protocol-fit.ts";
import { watchedCall, type HandoffWatch } from "./handoff/watch.ts";
import { placeForRequest } from "./placing.ts";
import { keepingRouteHint, withRouteHint } from "./route-hint.ts";
import { neverReachedEngine, nextAttempt, type NextAttempt } from "./retry.ts";
import type { PipelineDeps } from "./types.ts";

/** One upstream leg: which worker, which body under which id, what may be retried. */
export interface LegPlan {
  readonly role: Role;
  readonly path: string;
  readonly workers: LegWorkers;
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
  readonly body: LegBody;
  /** Sub-agent affinity: signed per attempt, as the signature covers the attempt's id. */
  readonly affinity: Affinity | undefined;
  /** A streamed generation leg's bound on its wait for headers (before its first token); 0 or unset: the request timeout. */
  readonly firstTokenTimeoutMs?: number | undefined;
  /** A leg of a context-first hand-off (its context leg, its generation leg): whether it reached a worker, and who takes over an attempt the request's end leaves in flight. */
  readonly handoff?: HandoffWatch | undefined;
}

/** Which workers a leg's attempts may go to. */
export interface LegWorkers {
  /** The paired leg's worker, never used for this leg. */
  readonly exclude: string | undefined;
  /** A worker already chosen for the first attempt (generation-first picks the context worker early). */
  readonly first?: Placed | undefined;
  /** Retries stay on the first worker (a generation-first hand-off names it). */
  readonly pinned?: boolean;
  /** Workers to prefer not to use (a restarted request's failed generation worker). */
  readonly avoid?: readonly string[] | undefined;
  /** Only workers with this capability take the leg (a disaggregated Responses request). */
  readonly requires?: Capability | undefined;
  /** No router places it (a one-shot call): the least loaded worker, ties in turn, as upstream's count_tokens takes the context servers in turn. */
  readonly leastLoaded?: boolean | undefined;
}

/**
 * The body of an attempt sent under `id`, as the newest worker takes it: each attempt's worker
 * is sent it cut to its protocol (protocol-fit.ts), then encoded with `codec`.
 */
export interface LegBody {
  readonly of: (id: bigint) => JsonObject;
  readonly codec: BodyCodec;
  /** The client's body bytes, whose unchanged members the codec may send as they came. */
  readonly source?: JsonSource | undefined;
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

/** The next attempt of a leg: its number, the id it is sent under, and how it goes. */
interface Step {
  readonly attempt: number;
  readonly id: bigint;
  /** Attempts so far outside --max-retries. */
  readonly freeRetries: number;
  /** Sent on a fresh connection (a resend of a request a reused one lost unread). */
  readonly resend: boolean;
  /** An optional field a worker rejected was dropped: not twice. */
  readonly fieldDropped: boolean;
  /** Its worker, reserved again, when it stays on the last one. */
  readonly again: Placed | undefined;
}

/** Runs a leg's attempts: placement, the call, and what nextAttempt decides after a failure; each attempt is one LegAttempt. */
async function runAttempts<T>(
  deps: PipelineDeps,
  ctx: RequestContext,
  plan: LegPlan,
  call: (post: WorkerPost) => Promise<T>,
  lastsUntil: "answer" | "request end",
): Promise<LegResult<T>> {
  const failedOn: string[] = [];
  let step: Step = { attempt: 0, id: plan.id, freeRetries: 0, resend: false, fieldDropped: false, again: undefined };
  // The last attempt's placement: a worker reserved again for the leg keeps the rank chosen for it.
  let previous: Placed | undefined;
  for (;;) {
    const { attempt, id } = step;
    // oxlint-disable-next-line no-await-in-loop -- each attempt is placed after the one before failed
    const placed =
      step.again === undefined ? await placeAttempt(deps, ctx, plan, attempt, failedOn) : keepingRouteHint(step.again, previous);
    previous = placed;
    const leg = new LegAttempt(deps, ctx, plan, placed, attempt, id);
    const sent = fitToWorker(withRouteHint(plan.body.of(id), placed), leg.worker.protocol.accepts);
    const reachedBefore = plan.handoff?.reached ?? false;
    try {
      const post = leg.post(plan, plan.body.codec.encode(sent, plan.body.source), step.resend);
      const result = await (plan.handoff === undefined
        ? call(post)
        : watchedCall(call, post, plan.signal, plan.handoff, id, (settled) => leg.keepUntil(settled)));
      // A streamed leg lasts until the request's end, which completes it.
      if (lastsUntil === "answer") {
        leg.answered();
        return { origin: leg.origin, id, result };
      }
      return { origin: leg.origin, id, result, endEarly: leg.endsWithRequest() };
    } catch (thrown) {
      const error = asProxyError(thrown);
      if (plan.handoff !== undefined && neverReachedEngine(error)) plan.handoff.reached = reachedBefore;
      const next = nextAttempt(error, {
        role: plan.role,
        attempt,
        freeRetries: step.freeRetries,
        maxRetries: deps.config.maxRetries,
        aborted: plan.signal.aborted,
        pinned: plan.workers.pinned ?? false,
        wholeAnswer: lastsUntil === "answer",
        resend: step.resend,
        rejectedField: step.fieldDropped ? undefined : rejectedField(error, sent, plan.path),
        retryable: plan.retryable,
      });
      const again = await afterFailure(deps, ctx, plan, { leg, error, next, attempt }, failedOn);
      step = {
        attempt: attempt + 1,
        id: next.kind === "resend" ? id : plan.freshIdOnRetry ? deps.ids.next() : plan.id,
        freeRetries: step.freeRetries + (next.kind === "resend" || next.kind === "elsewhere" ? 1 : 0),
        resend: next.kind === "resend",
        fieldDropped: step.fieldDropped || next.kind === "without field",
        again,
      };
    }
  }
}

/** Carries out what follows a failed attempt: the worker reserved again when the next attempt stays on it; throws when the leg fails. */
async function afterFailure(
  deps: PipelineDeps,
  ctx: RequestContext,
  plan: LegPlan,
  failed: { readonly leg: LegAttempt; readonly error: ProxyError; readonly next: NextAttempt; readonly attempt: number },
  failedOn: string[],
): Promise<Placed | undefined> {
  const { leg, error, next } = failed;
  const sameWorker = (): Placed => deps.placement.reserveAgain(plan.role, ctx.disaggRequestId, leg.worker, plan.routing);
  // The number of the retry that follows, for the log line.
  const retry = failed.attempt + 1;
  if (next.kind === "fail") {
    if (next.starting) leg.answeredStarting(true);
    leg.failed(error, undefined, next.saysNothing);
    throw error;
  }
  if (next.kind === "resend") {
    leg.lostUnread(error);
    ctx.retried();
    return sameWorker();
  }
  if (next.kind === "without field") {
    dropField(deps.logger, leg.worker, next.field);
    leg.failed(error, retry);
    ctx.retried();
    return sameWorker();
  }
  if (next.kind === "elsewhere") {
    leg.answeredStarting(false);
    leg.movesOn(error);
  } else leg.failed(error, retry, next.saysNothing);
  failedOn.push(leg.origin);
  ctx.retried();
  if (next.kind === "retry") await pause(deps.config.retryDelayMs, plan.signal);
  return undefined;
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

  /** The request's end leaves this attempt running (a hand-off followed): what it holds at the coordinator lasts as long. */
  keepUntil(settled: Promise<unknown>): void {
    this.#placed.reservation.keepUntil?.(settled);
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
    this.#placed.reservation.completed?.();
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
    if (error === undefined) this.#placed.reservation.completed?.();
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

function placeAttempt(
  deps: PipelineDeps,
  ctx: RequestContext,
  plan: LegPlan,
  attempt: number,
  failedOn: readonly string[],
): Placed | Promise<Placed> {
  const { first, pinned, avoid } = plan.workers;
  if (first && (attempt === 0 || pinned === true)) {
    if (attempt === 0) return first;
    return keepingRouteHint(deps.placement.reserveAgain(plan.role, ctx.disaggRequestId, first.worker, plan.routing), first);
  }
  const request = {
    role: plan.role,
    requestKey: ctx.disaggRequestId,
    exclude: plan.workers.exclude,
    avoid: avoid === undefined ? failedOn : [...avoid, ...failedOn],
    routing: plan.routing,
    requires: plan.workers.requires,
    signal: plan.signal,
  };
  return plan.workers.leastLoaded === true ? deps.placement.placeLeastLoaded(request) : placeForRequest(deps, ctx, request);
}
