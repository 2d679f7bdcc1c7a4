import type { Role } from "../config/types.ts";
import type { ErrorCode, Outcome } from "../errors.ts";

/** How one client request ended, as the request log and the metrics see it (no body, no key). */
export interface EndedRequest {
  readonly route: string;
  readonly outcome: Outcome;
  readonly status: number;
  /** Undefined when the request was refused before it got one (validation, auth, admission). */
  readonly disaggRequestId: bigint | undefined;
  /** The worker that failed it, else the last one that served it. */
  readonly worker: string | undefined;
  /** The error message the client got (may quote its body, or a worker's text); undefined on success. */
  readonly message: string | undefined;
  /** The error's code; undefined on success. */
  readonly code: ErrorCode | undefined;
  readonly ttftMs: number | undefined;
  readonly durationMs: number | undefined;
}

/**
 * Hears the same events the Prometheus counters are fed, with the worker named (the counters
 * keep to per-role families to bound their label sets). The live dashboard is one; nothing in
 * the pipeline knows which. Every method is O(1) and never throws.
 */
export interface TrafficObserver {
  legAttempt(role: Role, origin: string): void;
  legFailed(role: Role, origin: string | undefined): void;
  /** Seconds from the attempt's start to its first token (or answer) and to its end. */
  legCompleted(role: Role, origin: string | undefined, firstTokenSeconds: number, completeSeconds: number): void;
  keepaliveSent(route: string): void;
  streamOpened(): void;
  streamClosed(): void;
  requestEnded(request: EndedRequest): void;
}
