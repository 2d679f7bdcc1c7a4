import type { ProxyError } from "../errors.ts";

/**
 * What one streamed route adds to the shared streaming mechanism (client-relay.ts): pure state machines
 * from upstream bytes to client bytes. The mechanism owns timers, cancellation and order;
 * a dialect never touches a socket, a timer or a promise.
 */
/** One streamed request's state (each dialect builds a fresh one per request). */
export interface DialectStream {
  /**
   * Bytes sent first when the response opens before the pipeline answered
   * (start wait expired). Not called when the pipeline answered in time.
   */
  opening(): Uint8Array | undefined;
  /**
   * Client bytes for one chunk of the generation worker's SSE stream, in order.
   * Chunk boundaries are arbitrary (a frame or a UTF-8 sequence may be split anywhere).
   * Returns undefined when nothing is to be sent yet.
   */
  push(chunk: Uint8Array): Uint8Array | undefined;
  /**
   * Bytes to send after a silence of the keepalive interval, or undefined when none may be
   * inserted now (e.g. part of a frame was already forwarded).
   */
  keepalive(): Uint8Array | undefined;
  /**
   * The upstream stream ended cleanly. Returns trailing client bytes, or a ProxyError when
   * the stream was incomplete (no terminal event): the mechanism then calls fail().
   */
  end(): Uint8Array | ProxyError | undefined;
  /**
   * Ends the client stream with an in-band error in this dialect (late failure), first
   * terminating any half-written frame and closing open blocks.
   */
  fail(error: ProxyError): Uint8Array;
  /**
   * A failure before the response opened that this dialect's clients expect inside a 200
   * stream rather than as an HTTP error: the whole stream's bytes, or undefined (the default)
   * to answer with the failure's HTTP status. Not called once the response has opened.
   */
  refusal?(error: ProxyError): Uint8Array | undefined;
  /** An in-band error the worker itself sent, seen while relaying (for logs and metrics). */
  readonly workerError: string | undefined;
  /**
   * The client has been sent the response's last event ([DONE], message_stop, a terminal
   * Responses event, or the worker's own in-band failure): a client that leaves now leaves a
   * whole response, as clients do (Codex closes on response.completed), not a cut one.
   */
  readonly delivered: boolean;
}
