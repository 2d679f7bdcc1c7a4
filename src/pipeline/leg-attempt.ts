import type { Role } from "../config/types.ts";
import type { ProxyError } from "../errors.ts";
import { RETURN_METRICS_HEADER } from "../observability/perf-format.ts";
import type { LegSpan } from "../observability/request-spans.ts";
import { setLegTraceHeaders } from "../observability/trace-context.ts";
import type { RequestContext } from "../request/context.ts";
import type { EndListener } from "../request/context-options.ts";
import type { AttemptOutcome, Placed } from "../routing/placement.ts";
import type { Reservation } from "../routing/reservations.ts";
import type { RoutingRequest } from "../routing/routing-request.ts";
import type { WorkerBody } from "../workers/body-codec.ts";
import type { WorkerPost } from "../workers/worker-call.ts";
import type { WorkerEntry } from "../workers/worker-pool.ts";
import { affinityHeaders } from "./affinity.ts";
import type { LegPlan, StreamedAttempt } from "./leg-plan.ts";
import type { PipelineDeps } from "./types.ts";

/**
 * One attempt of a leg, from its placement to its end: the placement (its reservation, the
 * routers' learning, the outlier detector), the span and the request's metrics and ledger,
 * told in one place whichever way it ends. The runner logs what it decides.
 *
 * A streamed attempt lives as long as its stream, so it keeps only what its end needs: not the
 * plan, whose body closure holds the whole worker body (the client's prompt among it), and the
 * routing request (the prompt's text) only when a router learns from it.
 */
export class LegAttempt implements EndListener, StreamedAttempt {
  readonly origin: string;
  readonly worker: WorkerEntry;
  readonly #deps: PipelineDeps;
  readonly #ctx: RequestContext;
  readonly #role: Role;
  readonly #routing: RoutingRequest | undefined;
  /** Its reservation, held by the request (a field, not in a placement object of its own: one cell fewer per open stream). */
  readonly #reservation: Reservation;
  readonly #span: LegSpan;
  readonly #id: bigint;
  readonly #startedMs: number;
  /** A streamed attempt not yet ended (with its request, or before). */
  #streaming = false;

  constructor(deps: PipelineDeps, ctx: RequestContext, plan: LegPlan, placed: Placed, attempt: number, id: bigint) {
    this.#deps = deps;
    this.#ctx = ctx;
    this.#role = plan.role;
    this.#routing = deps.placement.learns(plan.role) ? plan.routing : undefined;
    this.#reservation = ctx.hold(placed.reservation);
    this.origin = placed.worker.origin;
    this.worker = placed.worker;
    this.#id = id;
    this.#startedMs = ctx.elapsedMs();
    ctx.hooks.legAttempt(plan.role, this.origin);
    this.#span = ctx.spans.startLeg({ role: plan.role, origin: this.origin, path: plan.path, attempt, disaggRequestId: id });
  }

  /** The attempt's call; `signal` and `onAnswer` are a hand-off watch's (handoff/watch.ts), which aborts the attempt itself. */
  post(plan: LegPlan, body: WorkerBody, fresh: boolean, signal = plan.signal, onAnswer?: () => void): WorkerPost {
    const ctx = this.#ctx;
    const deps = this.#deps;
    // One record filled in place: a leg's headers are built for every attempt.
    const headers: Record<string, string> = { ...plan.headers };
    if (plan.affinity !== undefined)
      Object.assign(headers, affinityHeaders(deps.settings.internalAuthKey, plan.affinity, plan.role, this.#id));
    setLegTraceHeaders(headers, ctx.trace, this.#span.spanId);
    // Workers are asked for their metrics only when this request's are collected (§5.3).
    if (ctx.perf !== undefined) headers[RETURN_METRICS_HEADER] = "1";
    return {
      role: plan.role,
      origin: this.origin,
      path: plan.path,
      body,
      signal,
      onAnswer,
      // A streamed generation leg's headers come before its first token: --first-token-timeout-ms bounds them too.
      timeoutMs:
        plan.firstTokenTimeoutMs !== undefined && plan.firstTokenTimeoutMs > 0 ? plan.firstTokenTimeoutMs : deps.settings.requestTimeoutMs,
      maxAnswerBytes: deps.settings.maxAnswerBytes,
      fetch: deps.workerFetch,
      deadlines: deps.deadlines,
      headers,
      fresh,
    };
  }

  /** The request's end leaves this attempt running (a hand-off followed): what it holds at the coordinator lasts as long. */
  keepUntil(settled: Promise<unknown>): void {
    this.#reservation.keepUntil?.(settled);
  }

  /** The worker did nothing with the request (lost unread, a start-up 503): the leg asks again, outside the retry budget. */
  untried(error: ProxyError): void {
    this.#end(error, { error, says: "untried", reservation: this.#reservation });
    this.#ctx.hooks.legRetry(this.#role);
  }

  /** A non-streamed answer: the worker is free again. */
  answered(): void {
    this.#end(undefined, { error: undefined, reservation: this.#reservation });
    const seconds = (this.#ctx.elapsedMs() - this.#startedMs) / 1000;
    this.#ctx.hooks.legCompleted(this.#role, seconds, seconds, this.origin);
  }

  /** A streamed attempt: it completes when the request ends (the attempt itself is told: no closure held per stream). */
  endsWithRequest(): StreamedAttempt {
    this.#streaming = true;
    this.#ctx.atEnd(this);
    return this;
  }

  /** Ends a streamed attempt before its request, with its failure. */
  endEarly(error: ProxyError): void {
    this.atRequestEnd(error);
  }

  /** The request whose stream this attempt served ended (its reservation goes with it); once. */
  atRequestEnd(error: ProxyError | undefined): void {
    if (!this.#streaming) return;
    this.#streaming = false;
    this.#end(error, { error, reservation: this.#reservation, streamed: true });
    const ttftMs = this.#ctx.ttftMs;
    if (ttftMs === undefined) return;
    if (error !== undefined) {
      this.#countFailure(error);
      return;
    }
    const seconds = (ms: number): number => (ms - this.#startedMs) / 1000;
    this.#ctx.hooks.legCompleted(this.#role, seconds(ttftMs), seconds(this.#ctx.elapsedMs()), this.origin);
  }

  /** A failed attempt; `retried`: another follows; `saysNothing`: it counts against no worker (the proxy stopped it, or it was not the worker's). */
  failed(error: ProxyError, retried: boolean, saysNothing: boolean): void {
    this.#end(error, { error, says: saysNothing ? "nothing" : "worker", reservation: this.#reservation });
    this.#countFailure(error);
    if (retried) this.#ctx.hooks.legRetry(this.#role);
  }

  #countFailure(error: ProxyError): void {
    if (error.code === "CLIENT_GONE") return;
    this.#ctx.hooks.legFailed(this.#role, this.origin);
    this.#ctx.attemptFailed(this.origin);
  }

  #end(error: ProxyError | undefined, outcome: AttemptOutcome): void {
    void this.#deps.placement.attemptEnded(this.#role, this.origin, this.#routing, outcome);
    this.#span.end(error);
  }
}
