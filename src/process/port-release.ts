/**
 * The old side of a take-over (take-over.ts): the process serving a port answers hello, state
 * and release on its control socket, and lets the port go only to a successor that serves it.
 */

import type { Logger } from "../observability/logger.ts";
import type { RunningProxy } from "../server/serve.ts";
import type { ControlHandler, ControlServer } from "./control-socket.ts";
import { ALREADY_RELEASED, type ProcessInfo } from "./control-messages.ts";
import { listensOn } from "./port-listener.ts";

export interface OldSide {
  readonly info: ProcessInfo;
  readonly proxy: RunningProxy;
  readonly control: ControlServer;
  readonly drainTimeoutMs: number;
  readonly logger: Logger;
  /** Called once, when a new process took the port: `finished` resolves when this one has drained. */
  onReleased(finished: Promise<void>): void;
}

/**
 * Why the port must not be let go to the process a release names, or undefined: it must be
 * another process, listening on the port now. Anything that can open the control socket can
 * ask; without this a stray `{"op":"release"}` left the port with no process serving it.
 */
export async function successorRefusal(
  pid: number | undefined,
  port: number,
  listens: (pid: number, port: number) => Promise<boolean> = listensOn,
): Promise<string | undefined> {
  if (pid === undefined) return "no successor listening: the release names no process (pid) to serve the port";
  if (pid === process.pid) return `no successor listening: pid ${pid} is this process`;
  return listens(pid, port).then(
    (listening) => (listening ? undefined : `no successor listening: pid ${pid} does not listen on port ${port}`),
    (error: unknown) =>
      `no successor listening: cannot tell whether pid ${pid} listens on port ${port} (${error instanceof Error ? error.message : String(error)})`,
  );
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
    const refusal = await successorRefusal(pid, Number(side.proxy.url.port));
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
    // One release is decided at a time: of two successors asking at once, one gets the port.
    const decision = deciding.then(() => decide(request.pid));
    deciding = decision;
    return decision.then(grant);
  };
}
