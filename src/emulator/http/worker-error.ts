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

/**
 * A request the worker refuses: becomes `{"object":"error",…}` with this status, and a `code`
 * that is the status unless the refusal has a code of its own (context_length_exceeded).
 */
export class WorkerError extends Error {
  override readonly name = "WorkerError";
  readonly status: number;
  readonly type: string;
  readonly code: number | string;

  constructor(status: number, message: string, type: string = errorTypeFor(status), code: number | string = status) {
    super(message);
    this.status = status;
    this.type = type;
    this.code = code;
  }
}

export function errorEnvelope(status: number, message: string, type: string = errorTypeFor(status), code: number | string = status) {
  return { object: "error", message, type, param: null, code };
}

export function errorResponse(error: WorkerError): Response {
  return Response.json(errorEnvelope(error.status, error.message, error.type, error.code), { status: error.status });
}

/**
 * A prompt longer than the worker's max_seq_len, refused as trtllm-serve refuses one since
 * #19457 (28c5d5a5c5, 2026-10-01): a 400 whose message is OpenAI's, built by
 * tensorrt_llm/executor/utils.py `context_length_exceeded_message(max, prompt)` (the server
 * tests, read_file id 70156702744, call it with (8, 9) and find "maximum context length is 8
 * tokens" in it), and whose envelope's code is `context_length_exceeded`. The index holds no
 * copy of that function: the text after its first sentence is OpenAI's own wording.
 */
export function contextLengthExceeded(maxTokens: number, promptTokens: number): WorkerError {
  const message =
    `This model's maximum context length is ${maxTokens} tokens. However, your messages resulted in ${promptTokens} tokens. ` +
    "Please reduce the length of the messages.";
  return new WorkerError(400, message, errorTypeFor(400), "context_length_exceeded");
}

/** FastAPI's own answers for routing misses (`{"detail": …}`), as a real worker gives them. */
export function detailResponse(status: number, detail: string): Response {
  return Response.json({ detail }, { status });
}

/** An abort of the request's own signal, or a fetch timeout (DOMException in Bun, Error elsewhere). */
export function isAbortError(error: unknown): boolean {
  return error instanceof Error && (error.name === "AbortError" || error.name === "TimeoutError");
}
