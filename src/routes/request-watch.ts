import { asProxyError, clientGone, ProxyError } from "../errors.ts";
import type { RequestContext } from "../request/context.ts";
import type { Ending, EndingListener, EndingSource } from "../streaming/stream-request.ts";

/**
 * What a started request is watched by until its one end, as one object with methods: the
 * client's abort (which aborts its legs) and the answer's ending (which ends its context).
 * Closures for each lived as long as a stream and kept mostly empty heap blocks with them.
 */
export class RequestWatch implements EventListenerObject, EndingListener {
  readonly #ctx: RequestContext;
  readonly #client: AbortSignal;

  constructor(ctx: RequestContext, client: AbortSignal) {
    this.#ctx = ctx;
    this.#client = client;
    if (client.aborted) this.handleEvent();
    else client.addEventListener("abort", this, { once: true });
  }

  /** The client left: its legs are aborted, and the answer fails. */
  handleEvent(): void {
    this.#ctx.abortLegs(clientGone());
  }

  /** The answer is over: the request ends, once, and the client is no longer watched. */
  requestEnded({ status, error }: Ending): void {
    this.#client.removeEventListener("abort", this);
    this.#ctx.end(status, error);
  }

  /** Ends the request when `ended` says (a promise, or a stream's relay). */
  endWhen(ended: Promise<Ending> | EndingSource): void {
    if (!(ended instanceof Promise)) ended.whenEnded(this);
    else
      ended.then(
        (ending) => this.requestEnded(ending),
        (thrown: unknown) => this.requestEnded(endingOf(asProxyError(thrown))),
      );
  }
}

export function endingOf(error: ProxyError): Ending {
  return { status: error.status, error };
}

/** An end without an answer (rendering the failure threw). Made only then: an error up front would cost every request a stack. */
export function internalFailure(): Ending {
  return endingOf(new ProxyError("INTERNAL", 500, "Internal server error"));
}
