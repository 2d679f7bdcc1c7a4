import { ProxyError } from "../errors.ts";
import type { RequestPerf } from "../observability/request-perf.ts";
import { requestSpans, type RequestSpans } from "../observability/request-spans.ts";
import type { TraceContext } from "../observability/trace-context.ts";
import type { TraceHandle } from "../observability/request-trace.ts";
import type { ModelNames } from "../routing/model-choice.ts";
import type { Reservation } from "../routing/reservations.ts";
import type { Role } from "../config/types.ts";
import { NO_HOOKS, placedByText, type RequestHooks, type RequestSummary } from "./reports.ts";
import { HeldReservation } from "./held-reservation.ts";
import type { EndListener, RequestContextOptions } from "./context-options.ts";

import type { PlacedBy } from "../routing/coordination.ts";

/** The default clock: one function for every request (a bound `performance.now` per request cost a closure each). */
const PERFORMANCE_NOW = (): number => performance.now();

/** The abort reason of whatever still runs when a request ends well: one shared error, not a stack captured per request. */
const REQUEST_ENDED = Object.freeze(new ProxyError("CLIENT_GONE", 499, "Request ended"));

/**
 * One client request, from arrival to its one end. Every upstream leg listens to `signal`; `end()` runs once, from the
 * route's `finally` (routes/proxied.ts), whatever ends it: it aborts what still runs, releases every reservation and
 * reports the summary. What happens on the way is told through methods, so every write is one line to find.
 */
export class RequestContext {
  readonly disaggRequestId: bigint;
  readonly route: string;
  readonly stream: boolean;
  /** The client's trace (or one started for it); each leg attempt is a span under it. */
  readonly trace: TraceContext;
  readonly hooks: RequestHooks;
  /** Per-request perf metrics (return_perf_metrics / perf_metrics_output_dir); undefined when not collected. */
  readonly perf: RequestPerf | undefined;
  /** Its server span and one client span per leg attempt (otlp_config). */
  readonly spans: RequestSpans;
  /** Its request trace: what the client received is kept here for the trace's terminal line. */
  readonly traced: TraceHandle | undefined;
  /** What its legs are placed under (a coordinator's req_id): its id, then its restart's (orchestrate.ts). */
  placementKey: bigint;
  #engineRequestId: bigint;
  #engineRequestName: string | undefined;
  #contextWorker: string | undefined;
  #generationWorker: string | undefined;
  #failedWorker: string | undefined;
  #placedBy: Partial<Record<Role, PlacedBy>> | undefined;
  #placementMs: number | undefined;
  // The log line's facts as fields, not in the objects they came in: one cell fewer each while a stream is open.
  #model: string | undefined;
  #requestedModel: string | undefined;
  #retries = 0;
  #bytesOut = 0;
  readonly #schedule: string;
  readonly #controller = new AbortController();
  /** Aborts when the request ends for any reason; every upstream call carries it (read once: the controller's getter is native). */
  readonly signal: AbortSignal = this.#controller.signal;
  /** Held reservations, each once (a list: a request holds two or three, and a Set costs more to make). */
  readonly #reservations: Reservation[] = [];
  readonly #onEnd: (summary: RequestSummary, ctx: RequestContext) => void;
  readonly #clientKnown: boolean;
  readonly #clientAddress: string | undefined;
  readonly #userAgent: string | undefined;
  readonly #now: () => number;
  readonly #startedAt: number;
  #ttfbMs: number | undefined;
  #ttftMs: number | undefined;
  /** What atEnd was given (made on first use: a whole answer's request has none). */
  #atEnd: EndListener[] | undefined;
  /** What onLegsAborted and abortAtEnd were given (made on first use). */
  #legWatchers: ((() => void) | AbortController)[] | undefined;
  #ended = false;
  readonly #releaseAdmission: (() => void) | undefined;
  /** Attempts that run on past the request's end and keep its admission slot. */
  #admissionKeepers = 0;

  constructor(options: RequestContextOptions<RequestContext>) {
    this.disaggRequestId = options.disaggRequestId;
    this.#engineRequestId = options.disaggRequestId;
    this.placementKey = options.disaggRequestId;
    this.route = options.route;
    this.stream = options.stream;
    this.trace = options.trace;
    this.hooks = options.hooks ?? NO_HOOKS;
    this.perf = options.perf;
    this.spans = options.spans ?? requestSpans(options.trace, options.route, undefined);
    this.traced = options.traced;
    this.#schedule = options.schedule;
    this.#releaseAdmission = options.releaseAdmission;
    this.#onEnd = options.onEnd;
    this.#clientKnown = options.client !== undefined;
    this.#clientAddress = options.client?.address;
    this.#userAgent = options.client?.userAgent;
    this.#now = options.now ?? PERFORMANCE_NOW;
    this.#startedAt = this.#now();
  }

  get ended(): boolean {
    return this.#ended;
  }

  /** The id the generation leg ran under (a context retry re-issues the id). */
  get engineRequestId(): bigint {
    return this.#engineRequestId;
  }

  /** How the client's reply names the request: the worker's own id when it served it alone. */
  get replyId(): string {
    return this.#engineRequestName ?? this.#engineRequestId.toString();
  }

  get contextWorker(): string | undefined {
    return this.#contextWorker;
  }

  get generationWorker(): string | undefined {
    return this.#generationWorker;
  }

  /** The context phase answered under `id`: generation continues under it. */
  continuesAs(id: bigint): void {
    this.#engineRequestId = id;
  }

  /** The worker served the request alone and named it itself (no disaggregated id was sent). */
  namedByWorker(name: string): void {
    this.#engineRequestName = name;
  }

  /** A leg's answering worker, for the log line and /perf_metrics. */
  legServed(role: Role, origin: string): void {
    if (role === "context") this.#contextWorker = origin;
    else this.#generationWorker = origin;
  }

  /** With a coordinator configured: which placed the role's leg (the last placement counts), in `ms`. */
  placedBy(role: Role, by: PlacedBy, ms: number): void {
    this.#placedBy = { ...this.#placedBy, [role]: by };
    this.#placementMs = (this.#placementMs ?? 0) + ms;
  }

  /** The model the request goes to, as placement chose it, for the log line and the server span. */
  modelChosen(names: ModelNames): void {
    this.#model = names.model;
    this.#requestedModel = names.requestedModel;
  }

  /** The worker the last failed attempt went to, if one failed. */
  get failedWorker(): string | undefined {
    return this.#failedWorker;
  }

  /** A leg attempt on `origin` failed: the log line names the worker a failed request last failed on. */
  attemptFailed(origin: string | undefined): void {
    this.#failedWorker = origin ?? this.#failedWorker;
  }

  /** A leg attempt failed and another follows. */
  retried(): void {
    this.#retries += 1;
  }

  /** `bytes` more went to the client (bytes on the wire, not characters). */
  sent(bytes: number): void {
    this.#bytesOut += bytes;
  }

  /** Keeps a reservation until it is released early or the request ends. */
  hold(reservation: Reservation): Reservation {
    if (!this.#reservations.includes(reservation)) this.#reservations.push(reservation);
    return new HeldReservation(reservation, this.#reservations);
  }

  markFirstByte(): void {
    this.#ttfbMs ??= this.#now() - this.#startedAt;
  }

  /** The first token reached the client: the log's ttft and, when collected, the perf metrics' first token. */
  markFirstToken(): void {
    this.#ttftMs ??= this.#now() - this.#startedAt;
    this.perf?.markFirstToken();
  }

  /** The worker's answer is complete (the perf metrics' last token). */
  markDone(): void {
    this.perf?.markDone();
  }

  /** A non-streamed answer goes out whole: its first byte, and its first and last token at once. */
  markAnswered(): void {
    this.markFirstByte();
    this.perf?.markFirstToken();
    this.markDone();
  }

  /** Milliseconds since the request started, on the context's clock. */
  elapsedMs(): number {
    return this.#now() - this.#startedAt;
  }

  /** When the first token reached the client, in ms since the start; undefined before. */
  get ttftMs(): number | undefined {
    return this.#ttftMs;
  }

  /** Runs once the request ends, with its error (undefined on success). */
  atEnd(listener: EndListener): void {
    (this.#atEnd ??= []).push(listener);
  }

  /**
   * An attempt that runs on past the request's end (a generation followed after its client left) keeps the admission
   * slot until it calls the returned function, so --max-inflight counts it. Called after the end, it keeps nothing.
   */
  keepAdmission(): () => void {
    if (this.#ended && this.#admissionKeepers === 0) return () => {};
    this.#admissionKeepers += 1;
    let released = false;
    return () => {
      if (released) return;
      released = true;
      this.#admissionKeepers -= 1;
      if (this.#ended && this.#admissionKeepers === 0) this.#releaseAdmission?.();
    };
  }

  /**
   * Runs `listener` once the legs are aborted (at the request's end at the latest), after the signal's own listeners; at
   * once if they already are. A plain list: a watched leg adds and removes one per attempt, where the signal's cost more.
   */
  onLegsAborted(listener: () => void): void {
    if (this.signal.aborted) listener();
    else (this.#legWatchers ??= []).push(listener);
  }

  /** Aborts `controller` with the legs' reason once they are aborted (no closure held for it while the request runs). */
  abortAtEnd(controller: AbortController): void {
    if (this.signal.aborted) controller.abort(this.signal.reason);
    else (this.#legWatchers ??= []).push(controller);
  }

  /** `listener` is no longer run when the legs are aborted. */
  offLegsAborted(listener: () => void): void {
    const watchers = this.#legWatchers;
    const at = watchers === undefined ? -1 : watchers.indexOf(listener);
    if (at >= 0) watchers?.splice(at, 1);
  }

  /** Aborts running legs without ending the request (e.g. a late failure is still being written). */
  abortLegs(reason: ProxyError): void {
    if (this.signal.aborted) return;
    this.#controller.abort(reason);
    const watchers = this.#legWatchers;
    this.#legWatchers = undefined;
    if (watchers === undefined) return;
    for (const watcher of watchers) {
      if (typeof watcher === "function") watcher();
      else watcher.abort(reason);
    }
  }

  /** The one end. `error` undefined means success. Later calls are ignored. */
  end(status: number, error?: ProxyError): void {
    if (this.#ended) return;
    this.#ended = true;
    this.abortLegs(error ?? REQUEST_ENDED);
    for (const reservation of this.#reservations) reservation.release();
    this.#reservations.length = 0;
    if (this.#atEnd !== undefined) for (const listener of this.#atEnd) listener.atRequestEnd(error);
    this.#onEnd(this.#summary(status, error), this);
    if (this.#admissionKeepers === 0) this.#releaseAdmission?.();
  }

  #summary(status: number, error: ProxyError | undefined): RequestSummary {
    return {
      disaggRequestId: this.disaggRequestId,
      engineRequestId: this.#engineRequestId,
      route: this.route,
      stream: this.stream,
      schedule: this.#schedule,
      contextWorker: this.#contextWorker,
      generationWorker: this.#generationWorker,
      failedWorker: this.#failedWorker,
      placedBy: placedByText(this.#placedBy),
      placementMs: this.#placementMs,
      model: this.#model,
      requestedModel: this.#requestedModel,
      status,
      outcome: error?.outcome ?? "ok",
      error: error?.message,
      errorCode: error?.code,
      cause: error?.outcome === "internal_error" ? error.cause : undefined,
      retries: this.#retries,
      ttfbMs: this.#ttfbMs,
      ttftMs: this.#ttftMs,
      durationMs: this.#now() - this.#startedAt,
      bytesOut: this.#bytesOut,
      client: this.#clientKnown ? { address: this.#clientAddress, userAgent: this.#userAgent } : undefined,
    };
  }
}
