/**
 * The one domain error of the proxy. Callers branch on `code`, never on message text.
 * `message` is what a client may see: it never holds a worker URL or a stack.
 */

export type ErrorCode =
  | "BAD_REQUEST"
  | "BODY_TOO_LARGE"
  | "BODY_TOO_SLOW"
  | "BODY_TOO_DEEP"
  | "BODY_TOO_FRAGMENTED"
  | "NOT_FOUND"
  | "MODEL_NOT_FOUND"
  | "METHOD_NOT_ALLOWED"
  | "NOT_READY"
  | "NO_WORKER"
  | "WORKER_HTTP_ERROR"
  | "CONTEXT_OVERFLOW"
  | "CONVERSION_ERROR"
  | "WORKER_UNREACHABLE"
  | "WORKER_TIMEOUT"
  | "WORKER_BAD_ANSWER"
  | "WORKER_STREAM_BROKEN"
  | "WORKER_TOO_OLD"
  | "CLIENT_GONE"
  | "DRAINING"
  | "OVERLOADED"
  | "WORKERS_BUSY"
  | "UNAUTHORIZED"
  | "MISDIRECTED"
  | "INTERNAL";

/** How a request ended, as the request log and metrics name it. */
export type Outcome = "ok" | "worker_error" | "client_disconnected" | "timeout" | "rejected" | "internal_error";

const OUTCOME_OF: Record<ErrorCode, Outcome> = {
  BAD_REQUEST: "rejected",
  BODY_TOO_LARGE: "rejected",
  BODY_TOO_SLOW: "rejected",
  BODY_TOO_DEEP: "rejected",
  BODY_TOO_FRAGMENTED: "rejected",
  NOT_FOUND: "rejected",
  MODEL_NOT_FOUND: "rejected",
  METHOD_NOT_ALLOWED: "rejected",
  NOT_READY: "rejected",
  DRAINING: "rejected",
  OVERLOADED: "rejected",
  WORKERS_BUSY: "rejected",
  UNAUTHORIZED: "rejected",
  // A Host this proxy does not answer to (DNS rebinding), on the routes that check it.
  MISDIRECTED: "rejected",
  // Every worker of the role is out of rotation (unhealthy, ejected, full): the proxy refused the
  // request before any worker saw it. Not a fault of the proxy, so not an internal error.
  NO_WORKER: "rejected",
  WORKER_HTTP_ERROR: "worker_error",
  // A worker refused the prompt as longer than its context: its verdict, as any worker 4xx.
  CONTEXT_OVERFLOW: "worker_error",
  // A worker's answer the route could not convert for its client (an Anthropic message).
  CONVERSION_ERROR: "worker_error",
  WORKER_UNREACHABLE: "worker_error",
  WORKER_TIMEOUT: "timeout",
  WORKER_BAD_ANSWER: "worker_error",
  WORKER_STREAM_BROKEN: "worker_error",
  WORKER_TOO_OLD: "worker_error",
  CLIENT_GONE: "client_disconnected",
  INTERNAL: "internal_error",
};

/** A worker's own error answer, relayed to the client as it was sent. */
export interface WorkerAnswer {
  readonly status: number;
  readonly contentType: string;
  /** At most the first 2,048 bytes for streamed requests; the whole body otherwise. */
  readonly body: Uint8Array;
}

/**
 * A worker's refusal of a prompt longer than its context window, as the pipeline knows it:
 * no client's wording, only the counts the worker stated (each dialect renders it).
 */
export interface ContextOverflow {
  /** The prompt's tokens as the worker counted them (what it compared with the maximum). */
  readonly promptTokens: number | undefined;
  /** The most tokens the worker takes. */
  readonly maxTokens: number | undefined;
}

export interface ProxyErrorOptions {
  readonly cause?: unknown;
  readonly workerAnswer?: WorkerAnswer;
  /** For WORKER_UNREACHABLE: the request provably never reached the worker. */
  readonly neverSent?: boolean;
  /**
   * For WORKER_UNREACHABLE: the connection failed before any response byte, and it was (or may
   * have been) a pooled connection reused: a worker closing it idle never read the request
   * (pipeline/retry.ts says when that holds, and what a middlebox resetting after forwarding
   * the request costs). One resend on a fresh connection follows.
   */
  readonly unread?: boolean;
  /** For CONTEXT_OVERFLOW: what the worker said of the prompt's length. */
  readonly overflow?: ContextOverflow;
  /**
   * For WORKER_HTTP_ERROR: the worker answered its start-up 503 (`x-trtllm-server-state:
   * starting`): its readiness gate answers before any route runs, so nothing was done.
   */
  readonly starting?: boolean;
  /**
   * For WORKER_HTTP_ERROR: the worker is draining (upstream's RequestTracker refuses new
   * admissions, "TensorRT-LLM is draining"): as a starting one, it did nothing; `starting` is set too.
   */
  readonly draining?: boolean;
}

export class ProxyError extends Error {
  override readonly name = "ProxyError";
  readonly code: ErrorCode;
  readonly status: number;
  readonly workerAnswer: WorkerAnswer | undefined;
  readonly neverSent: boolean;
  readonly unread: boolean;
  readonly overflow: ContextOverflow | undefined;
  readonly starting: boolean;
  readonly draining: boolean;

  constructor(code: ErrorCode, status: number, message: string, options: ProxyErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.status = status;
    this.workerAnswer = options.workerAnswer;
    this.neverSent = options.neverSent ?? false;
    this.unread = options.unread ?? false;
    this.overflow = options.overflow;
    this.draining = options.draining ?? false;
    this.starting = (options.starting ?? false) || this.draining;
  }

  get outcome(): Outcome {
    return OUTCOME_OF[this.code];
  }
}

export function badRequest(message: string): ProxyError {
  return new ProxyError("BAD_REQUEST", 400, message);
}

export function bodyTooLarge(maxBytes: number): ProxyError {
  return new ProxyError("BODY_TOO_LARGE", 413, `Request body is larger than ${maxBytes} bytes`);
}

/** The client left (closed its connection) before its request ended. */
export function clientGone(): ProxyError {
  return new ProxyError("CLIENT_GONE", 499, "Client disconnected");
}

export function internalError(cause: unknown): ProxyError {
  return new ProxyError("INTERNAL", 500, "Internal server error", { cause });
}

/** Whatever was thrown, as a ProxyError (unknown throws become an opaque 500). */
export function asProxyError(error: unknown): ProxyError {
  return error instanceof ProxyError ? error : internalError(error);
}
