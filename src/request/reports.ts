/** What a request reports: its summary once it ended, and its hooks as it goes. */

import type { ClientFacts } from "./client-address.ts";
import type { Role } from "../config/types.ts";
import type { PlacedBy } from "../routing/coordination.ts";
import type { ErrorCode, Outcome } from "../errors.ts";

/** What one finished request reports: the request log line and the metrics come from it. */
export interface RequestSummary {
  readonly disaggRequestId: bigint;
  readonly engineRequestId: bigint;
  readonly route: string;
  readonly stream: boolean;
  readonly schedule: string;
  readonly contextWorker: string | undefined;
  readonly generationWorker: string | undefined;
  /** The worker the last failed attempt went to (of either role), if an attempt failed. */
  readonly failedWorker: string | undefined;
  /** With a coordinator: which placed the request's legs (`coordinator`, `local`, or per role when they differ). */
  readonly placedBy: string | undefined;
  /** With a coordinator: how long its placements took, in ms (the coordinator's round trips, or the local routers'). */
  readonly placementMs: number | undefined;
  /** The served model it was placed on, and the client's name when that differs (routing/model-choice.ts's ModelNames). */
  readonly model: string | undefined;
  readonly requestedModel: string | undefined;
  readonly status: number;
  readonly outcome: Outcome;
  readonly error: string | undefined;
  /** The error's code (undefined on success): what the open dashboard shows instead of the message. */
  readonly errorCode: ErrorCode | undefined;
  /** What an internal error was caused by (logged at error level); undefined otherwise. */
  readonly cause: unknown;
  readonly retries: number;
  readonly ttfbMs: number | undefined;
  readonly ttftMs: number | undefined;
  readonly durationMs: number;
  readonly bytesOut: number;
  /** Who sent it: its address (--trusted-proxy: the one a trusted proxy forwarded) and User-Agent. */
  readonly client: ClientFacts | undefined;
}

/** What a request reports as it goes (metrics); every method is cheap and never throws. */
export interface RequestHooks {
  /** `origin` is the worker the attempt went to. */
  legAttempt(role: Role, origin: string): void;
  legRetry(role: Role): void;
  legFailed(role: Role, origin: string | undefined): void;
  /** Seconds from the attempt's start to its first token (or answer) and to its end. */
  legCompleted(role: Role, firstTokenSeconds: number, completeSeconds: number, origin: string | undefined): void;
  keepaliveSent(): void;
  streamOpened(): void;
  streamClosed(): void;
}

export const NO_HOOKS: RequestHooks = {
  legAttempt() {},
  legRetry() {},
  legFailed() {},
  legCompleted() {},
  keepaliveSent() {},
  streamOpened() {},
  streamClosed() {},
};

/** Which placed a request's legs, for its log line: one name, or each role's when they differ. */
export function placedByText(by: Partial<Record<Role, PlacedBy>> | undefined): string | undefined {
  if (by === undefined) return undefined;
  const { context, generation } = by;
  if (context === undefined || generation === undefined || context === generation) return context ?? generation;
  return `context:${context} generation:${generation}`;
}
