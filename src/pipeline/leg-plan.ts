import type { Role } from "../config/types.ts";
import type { ProxyError } from "../errors.ts";
import type { JsonObject } from "../json/json.ts";
import type { JsonSource } from "../json/json-source.ts";
import type { Placed } from "../routing/placement.ts";
import type { RoutingRequest } from "../routing/routing-request.ts";
import type { BodyCodec } from "../workers/body-codec.ts";
import type { Capability } from "../workers/protocol.ts";
import type { Affinity } from "./affinity.ts";
import type { HandoffWatch } from "./handoff/watch.ts";

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
  /** A streamed attempt ends with the request; it may end before, with its failure (once). */
  readonly streamed?: StreamedAttempt | undefined;
}

/** A streamed attempt, which ends with its request unless ended before. */
export interface StreamedAttempt {
  endEarly(error: ProxyError): void;
}
