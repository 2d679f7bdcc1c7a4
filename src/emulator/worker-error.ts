/** Errors the emulated worker answers, in trtllm-serve's worker error envelope. */

const ERROR_TYPES: Readonly<Record<number, string>> = {
  400: "BadRequestError",
  401: "AuthenticationError",
  403: "PermissionDeniedError",
  404: "NotFoundError",
  408: "RequestTimeoutError",
  409: "ConflictError",
  422: "UnprocessableEntityError",
  429: "RateLimitError",
  500: "InternalServerError",
  501: "NotImplementedError",
  503: "ServiceUnavailableError",
};

export function errorTypeFor(status: number): string {
  return ERROR_TYPES[status] ?? (status >= 500 ? "InternalServerError" : "BadRequestError");
}

/** A request the worker refuses: becomes `{"object":"error",…}` with this status. */
export class WorkerError extends Error {
  override readonly name = "WorkerError";
  readonly status: number;
  readonly type: string;

  constructor(status: number, message: string, type: string = errorTypeFor(status)) {
    super(message);
    this.status = status;
    this.type = type;
  }
}

export function errorEnvelope(status: number, message: string, type: string = errorTypeFor(status)) {
  return { object: "error", message, type, param: null, code: status };
}

export function errorResponse(error: WorkerError): Response {
  return Response.json(errorEnvelope(error.status, error.message, error.type), { status: error.status });
}

/** FastAPI's own answers for routing misses (`{"detail": …}`), as a real worker gives them. */
export function detailResponse(status: number, detail: string): Response {
  return Response.json({ detail }, { status });
}

/** An abort of the request's own signal, or a fetch timeout (DOMException in Bun, Error elsewhere). */
export function isAbortError(error: unknown): boolean {
  return error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError");
}
