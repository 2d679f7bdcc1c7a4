/**
 * Start-up readiness as trtllm-serve plays it (tensorrt_llm/serve/readiness.py @
 * e6c89c08db8fc8e39c32a9589c732157df5d9dcd): the socket listens at once, and until the model is
 * loaded every route, /health included, answers 503 with a constant JSON body (code
 * `starting`), `Retry-After: 1` and `x-trtllm-server-state: starting`, so a poller can tell
 * "starting" from "dead" (connection refused) without parsing the body.
 */

import { errorEnvelope } from "./worker-error.ts";

export const SERVER_STATE_HEADER = "x-trtllm-server-state";

const STARTING_BODY = JSON.stringify({
  error: {
    message:
      "The server is still initializing the model and cannot serve requests yet. It is listening, so this is not a crash; retry until /health returns 200.",
    type: "ServiceUnavailableError",
    code: "starting",
  },
});

/** The STARTING → READY gate: open after `startingMs`, or when opened. */
export class ReadinessGate {
  #ready: boolean;
  readonly #timer: ReturnType<typeof setTimeout> | undefined;

  constructor(startingMs: number | undefined) {
    this.#ready = startingMs === undefined || startingMs <= 0;
    this.#timer = this.#ready || !Number.isFinite(startingMs) ? undefined : setTimeout(() => this.open(), startingMs);
  }

  get ready(): boolean {
    return this.#ready;
  }

  open(): void {
    this.#ready = true;
    clearTimeout(this.#timer);
  }

  /** Shut again: the worker restarted in place and loads its model anew. */
  shut(): void {
    clearTimeout(this.#timer);
    this.#ready = false;
  }
}

/** The answer every route gets while the gate is shut. */
export function startingResponse(): Response {
  return new Response(STARTING_BODY, {
    status: 503,
    headers: { "content-type": "application/json", "retry-after": "1", [SERVER_STATE_HEADER]: "starting" },
  });
}

/**
 * A model request to a draining worker: upstream's RequestTracker refuses every new admission
 * once its drain began, with RuntimeError("TensorRT-LLM is draining") (admit and begin_external,
 * tensorrt_llm/serve/request_tracker.py @ 6953e49df5ebe16e710d8c2edcbb43696a64000b), while the
 * requests it holds run on and /health is the executor's (its health() ignores the drain). The
 * HTTP frontend that wires the tracker is not in the stored index: the status played is 503, as
 * the worker's other "not now" answers are.
 */
export function drainingResponse(): Response {
  return Response.json(errorEnvelope(503, DRAINING_MESSAGE), { status: 503 });
}

/** The tracker's own words, which the proxy recognises a drain by. */
export const DRAINING_MESSAGE = "TensorRT-LLM is draining";
