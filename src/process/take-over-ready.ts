/**
 * The new side of a take-over once its workers are ready (take-over.ts claimed the port before):
 * listen beside the old process, ask it for the release, hold the control socket.
 */

import type { ProxyConfig } from "../config/types.ts";
import type { Logger } from "../observability/logger.ts";
import type { RunningProxy } from "../server/serve.ts";
import type { ControlServer } from "./control-socket.ts";
import { notifyReady } from "./sd-notify.ts";
import { holdAfterRelease, ReleasedToAnother, ReleaseRefused, type PortClaim } from "./take-over.ts";

/** What the take-over needs from the process that runs it. */
export interface TakeOverSteps {
  readonly proxy: RunningProxy;
  readonly port: Extract<PortClaim, { kind: "taking-over" }>;
  readonly config: ProxyConfig;
  readonly logger: Logger;
  /** Listens on the port beside the old process (a listen failure ends the process). */
  readonly listen: () => Promise<void>;
  /** Holds the port's control socket once the old process let go of it. */
  readonly hold: (control: ControlServer) => void;
}

/**
 * The take-over once the worker checks ended: `serving` (this process took the port over),
 * `abandoned` (its workers were not ready: it never listened, the old process serves on
 * untouched; this one must stop), or `left` (another process took the port over, or the old
 * one kept it: this one listens and must stop listening and drain).
 */
export async function takeOverOnceReady(steps: TakeOverSteps, workersReady: boolean): Promise<"serving" | "abandoned" | "left"> {
  const { predecessor } = steps.port;
  if (!workersReady) {
    steps.logger.error("take-over abandoned: workers not ready before --server-start-timeout; the old process keeps serving", {
      old_pid: predecessor.info.pid,
    });
    return "abandoned";
  }
  // From listening beside it until its release's answer, the old process holds the registrations:
  // cluster storage calls go to it; one it can no longer answer waits for the handed items.
  const { promise: adopted, resolve: handedOver } = Promise.withResolvers<undefined>();
  steps.proxy.forwardStorage((call) => predecessor.storage(call).catch(() => adopted));
  await steps.listen();
  const lost = await releaseAndHold(steps).finally(() => {
    steps.proxy.forwardStorage(undefined);
    handedOver(undefined);
  });
  if (lost !== undefined) {
    steps.logger.error(`${lost.what}; this one stops listening, drains and exits`, { old_pid: predecessor.info.pid, reason: lost.reason });
    return "left";
  }
  for (const note of coldStartNotes(steps.config)) steps.logger.info(note);
  return "serving";
}

/** Asks the old process to release the port and holds its control socket; why this one must leave the port instead, if it must. */
async function releaseAndHold({
  proxy,
  port,
  logger,
  hold,
}: TakeOverSteps): Promise<{ readonly what: string; readonly reason: string } | undefined> {
  const { predecessor } = port;
  const late = await predecessor.release().catch((error: unknown) => {
    if (error instanceof ReleaseRefused) return error;
    // It may have exited meanwhile: the port is this process's either way, with the registrations it had.
    logger.warn("the old process did not answer the release; taking the port", { old_pid: predecessor.info.pid, error });
    return undefined;
  });
  if (late instanceof ReleasedToAnother) return { what: "another process took the port over first", reason: late.message };
  if (late instanceof ReleaseRefused) return { what: "the old process kept the port", reason: late.message };
  const registrations = late === undefined ? undefined : proxy.adoptRegistrations(late);
  const after = await holdAfterRelease(port.path, late !== undefined);
  if (after.kind === "lost") return { what: "another process took the port over first", reason: after.reason };
  if (after.kind === "held") hold(after.control);
  else
    logger.warn(
      `serving without the port's control socket (a second copy is not refused, --take-over cannot replace this process): ${after.reason}`,
    );
  notifyReady(logger);
  logger.info("took over the port", {
    from_pid: predecessor.info.pid,
    from_version: predecessor.info.version,
    registered_meanwhile: registrations?.added ?? 0,
    deregistered_meanwhile: registrations?.gone ?? 0,
  });
  return undefined;
}

/** Start-up lines after a take-over: what did not come along. */
export function coldStartNotes(config: ProxyConfig): string[] {
  const learned = [config.contextRouter, config.generationRouter].filter(
    (router) => router === "conversation" || router === "kv_cache_aware",
  );
  const notes = ["metrics counters start from zero in this process (Prometheus sees a counter reset)"];
  if (learned.length > 0)
    notes.push(
      `routers start cold: what ${[...new Set(learned)].join(" and ")} learned in the old process (conversations, cached blocks) is not handed over`,
    );
  return notes;
}
