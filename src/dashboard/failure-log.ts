import type { ErrorCode } from "../errors.ts";
import type { EndedRequest } from "../observability/traffic-observer.ts";
import type { FailureRow } from "./snapshot.ts";

/** Worker error messages can be long; a protected page shows the start. */
const MAX_MESSAGE_CHARS = 300;

/**
 * The proxy's own words for each failure, all an open dashboard shows: the message a client
 * got may quote a value from its body (a validation error) or a worker's free text, and an
 * open dashboard is readable by anyone who can reach /metrics. Every code has its words: a
 * code added to errors.ts does not typecheck until it has them here.
 */
const OWN_WORDS: Readonly<Record<ErrorCode, string>> = {
  BAD_REQUEST: "the request was refused as invalid",
  BODY_TOO_LARGE: "the request body was too large",
  BODY_TOO_SLOW: "the request body arrived too slowly",
  BODY_TOO_DEEP: "the request body was nested too deep",
  BODY_TOO_FRAGMENTED: "the request body came in too many pieces",
  NOT_FOUND: "no such route",
  MODEL_NOT_FOUND: "no worker serves the model the request named",
  METHOD_NOT_ALLOWED: "method not allowed",
  NOT_READY: "the workers were not ready",
  NO_WORKER: "no worker was available",
  WORKER_HTTP_ERROR: "the worker answered with an error",
  CONTEXT_OVERFLOW: "the prompt was longer than the worker's context",
  CONVERSION_ERROR: "the worker's answer could not be converted for the client",
  WORKER_UNREACHABLE: "the worker could not be reached",
  WORKER_TIMEOUT: "the worker did not answer in time",
  WORKER_BAD_ANSWER: "the worker's answer was refused",
  WORKER_STREAM_BROKEN: "the worker's stream broke",
  WORKER_TOO_OLD: "the worker's version cannot serve the request",
  CLIENT_GONE: "the client left",
  DRAINING: "the proxy was shutting down",
  OVERLOADED: "the proxy was at its in-flight limit",
  WORKERS_BUSY: "every worker reported a queue over --max-worker-queue",
  UNAUTHORIZED: "no valid API key",
  MISDIRECTED: "a Host this proxy does not answer to",
  INTERNAL: "internal error (see the log)",
};

/** What an open dashboard says about a failure: its code and the proxy's words for it. */
export function ownWording(code: ErrorCode | undefined): string | undefined {
  if (code === undefined) return undefined;
  return `${code}: ${OWN_WORDS[code]}`;
}

interface Entry {
  readonly row: FailureRow;
  /** The message the client got (bounded), shown only on a protected dashboard. */
  readonly detail: string | undefined;
}

/** The last `capacity` failed requests, newest first: ids, workers, status, outcome and code; never a body or a key. */
export class FailureLog {
  readonly #entries: (Entry | undefined)[];
  #written = 0;

  constructor(capacity: number) {
    this.#entries = Array.from({ length: capacity }, () => undefined);
  }

  add(atMs: number, request: EndedRequest): void {
    const message = request.message;
    this.#entries[this.#written % this.#entries.length] = {
      row: {
        at: atMs,
        route: request.route,
        disaggRequestId: request.disaggRequestId?.toString(),
        worker: request.worker,
        outcome: request.outcome,
        status: request.status,
        message: ownWording(request.code),
      },
      detail: message !== undefined && message.length > MAX_MESSAGE_CHARS ? `${message.slice(0, MAX_MESSAGE_CHARS)}…` : message,
    };
    this.#written++;
  }

  /** `details`: the messages clients got instead of the proxy's words (a dashboard behind client keys only). */
  newestFirst(details: boolean): FailureRow[] {
    const rows: FailureRow[] = [];
    for (let n = 1; n <= Math.min(this.#written, this.#entries.length); n++) {
      const entry = this.#entries[(this.#written - n) % this.#entries.length];
      if (entry !== undefined) rows.push(details ? { ...entry.row, message: entry.detail } : entry.row);
    }
    return rows;
  }
}
