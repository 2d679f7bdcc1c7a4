import type { ProxyError } from "../errors.ts";

/**
 * Retry rules (reference §4.5, tightened): a context leg is retried on transport failures,
 * timeouts, 408, 429 and 5xx; a generation leg only when the request provably never reached
 * the worker, so nothing that may have been delivered is ever replayed.
 */
export function contextLegRetryable(error: ProxyError): boolean {
  switch (error.code) {
    case "WORKER_UNREACHABLE":
    case "WORKER_TIMEOUT":
      return true;
    case "WORKER_HTTP_ERROR":
      return error.status === 408 || error.status === 429 || error.status >= 500;
    default:
      return false;
  }
}

export function generationLegRetryable(error: ProxyError): boolean {
  return error.code === "WORKER_UNREACHABLE" && error.neverSent;
}

/**
 * The worker's engine never took the request: it was refused (connection refused, reset unread),
 * or the worker turned it away as overloaded or unavailable (429, 503) before scheduling it. A
 * generation request that failed so never pulled its hand-off's KV.
 */
export function neverReachedEngine(error: ProxyError): boolean {
  if (error.code === "WORKER_UNREACHABLE") return error.neverSent || error.unread;
  return error.code === "WORKER_HTTP_ERROR" && (error.status === 429 || error.status === 503);
}
