/**
 * The old side of a take-over (take-over.ts): the process serving a port answers hello, state
 * and release on its control socket, and lets the port go only to a successor that serves it.
 */

import type { Logger } from "../observability/logger.ts";
import type { RunningProxy } from "../server/serve.ts";
import type { ControlHandler, ControlServer } from "./control-socket.ts";
import { ALREADY_RELEASED, type ProcessInfo } from "./control-messages.ts";
import { successorRefusal } from "./successor-check.ts";

export interface OldSide {
  readonly info: ProcessInfo;
  readonly proxy: RunningProxy;
  readonly control: ControlServer;
  readonly drainTimeoutMs: number;
  readonly logger: Logger;
  /** Called once, when a new process took the port: `finished` resolves when this one has drained. */
  onReleased(finished: Promise<void>): void;
}

/** Holds the port's control socket for this process: it answers hello, state and release until the process exits. */
export function holdPort(control: ControlServer, side: Omit<OldSide, "control">): void {
  // The socket file goes with the process (a killed one's is found stale and replaced).
  process.once("exit", () => control.close());
  control.serve(controlHandler({ ...side, control }));
}

/** What the holder of a port answers on its control socket. */
export function controlHandler(side: OldSide): ControlHandler {
  let released = false;
  let deciding: Promise<unknown> = Promise.resolve();
  const decide = async (pid: number | undefined): Promise<string | undefined> => {
    if (released) return ALREADY_RELEASED;
    const refusal = await successorRefusal({ pid, port: Number(side.proxy.url.port), self: process.pid, uid: process.getuid?.() ?? 0 });
    if (refusal === undefined) released = true;
    return refusal;
  };
  const grant = (refusal: string | undefined): Promise<Record<string, unknown>> => {
    if (refusal === ALREADY_RELEASED) return Promise.resolve({ error: ALREADY_RELEASED });
    if (refusal !== undefined) {
      side.logger.warn(`refused to release the port: ${refusal}`);
      return Promise.resolve({ error: refusal });
    }
    // The listener closes before the answer goes out: once the new process hears it, the port is its alone.
    const { listenerClosed, finished } = side.proxy.handOver(side.drainTimeoutMs);
    side.onReleased(finished);
    return listenerClosed.then(() => {
      const registrations = side.proxy.registrations();
      side.control.close();
      side.logger.info("released the port to a new process; draining", {
        registrations: registrations.length,
        drain_timeout_ms: side.drainTimeoutMs,
      });
      return { released: true, registrations };
    });
  };
  return (request) => {
    if (request.op === "hello") return Promise.resolve({ ...side.info });
    if (request.op === "state") return Promise.resolve({ registrations: side.proxy.registrations() });
    // Until this process answers the release, it holds the registrations: the successor asks it.
    if (request.op === "storage") return side.proxy.storageCall(request.call).then((answer) => ({ ...answer }));
    // One release is decided at a time: of two successors asking at once, one gets the port.
    const decision = deciding.then(() => decide(request.pid));
    deciding = decision;
    return decision.then(grant);
  };
}
