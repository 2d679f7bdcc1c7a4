/** One accepted request's trace handle: what its two lines join on and what they record. */

import { randomUUID } from "node:crypto";
import { TraceCapture } from "./trace-capture.ts";

/** One accepted request's trace: the id its two lines join on, and what its client received. */
export class TraceHandle {
  readonly traceId: string;
  readonly capture: TraceCapture;
  /** The conversation id routing keys on (the lines' session). */
  readonly session: string | undefined;
  readonly route: string;
  /** Its terminal line was submitted (only one ever is). */
  ended = false;

  constructor(route: string, session: string | undefined, maxResponseBytes: number) {
    this.traceId = `tr_${randomUUID().replaceAll("-", "")}`;
    this.route = route;
    this.session = session;
    this.capture = new TraceCapture(maxResponseBytes);
  }
}
