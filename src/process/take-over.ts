/**
 * An upgrade without a refused connection (README "Upgrading"). Both processes listen on the
 * port with SO_REUSEPORT; the per-port control socket (control-socket.ts) decides who may:
 *
 * 1. the new process (`--take-over`) connects to the old one's control socket, learns who it
 *    is and takes its HTTP cluster storage items (registered workers) before it listens;
 * 2. it listens beside the old one and waits until ready (its own start-up wait and checks);
 * 3. it asks the old one to release the port: the old one stops listening at once, answers
 *    with the items registered meanwhile, and drains; the new one takes the control socket.
 *
 * Without `--take-over` a second copy on a held port is refused before it listens.
 */

import type { ProxyConfig } from "../config/types.ts";
import { isJsonObject } from "../json/json.ts";
import type { HandedItem } from "../discovery/index.ts";
import type { Logger } from "../observability/logger.ts";
import {
  claimControlSocket,
  connectControlSocket,
  controlSocketPath,
  runtimeDirOf,
  type ControlHandler,
  type ControlServer,
} from "./control-socket.ts";
import { listenCovers, listenerOn, resolvedAddresses, type ListenAddresses } from "./listen-address.ts";
import { listensOn } from "./port-listener.ts";
import { notifyReady } from "./sd-notify.ts";
import type { RunningProxy } from "../server/serve.ts";

/** Who serves a port, as the control socket's hello says. */
export interface ProcessInfo {
  readonly pid: number;
  readonly version: string;
  /** ISO 8601, UTC. */
  readonly startedAt: string;
  /** The address it listens on (bind_host, else hostname); absent from a process of an earlier release. */
  readonly host?: string;
}

/** Hello and state are answered at once; release after the listener closed. */
const CONTROL_TIMEOUT_MS = 10_000;

export interface Predecessor {
  readonly info: ProcessInfo;
  /** Its cluster storage items when the take-over began. */
  readonly registrations: readonly HandedItem[];
  /**
   * Asks it to stop listening and drain, naming this process as the one that serves the port
   * (it checks that this process listens on it); resolves with the items registered with it
   * meanwhile. Rejects with ReleaseRefused when it answered no.
   */
  release(): Promise<HandedItem[]>;
}

export type PortClaim =
  /** Port 0: the kernel picks a port nobody else has; nothing to guard. */
  | { readonly kind: "unguarded" }
  | { readonly kind: "held"; readonly control: ControlServer }
  | { readonly kind: "taking-over"; readonly predecessor: Predecessor; readonly path: string }
  | { readonly kind: "refused"; readonly message: string };

/**
 * Why a take-over from `config`'s listen address would leave clients of the running process's
 * address refused (a narrower address: `127.0.0.1` taking over `0.0.0.0`), or undefined. Both
 * share one control socket, named by the port alone.
 */
async function narrowerListen(config: ProxyConfig, info: ProcessInfo, addressesOf: ListenAddresses): Promise<string | undefined> {
  const next = config.bindHost ?? config.host;
  const current = info.host;
  if (current === undefined || current.toLowerCase() === next.toLowerCase()) return undefined;
  const [nextAddresses, currentAddresses] = await Promise.all([addressesOf(next), addressesOf(current)]);
  if (listenCovers(nextAddresses, currentAddresses)) return undefined;
  return (
    `port ${config.port} is served on ${current} by disagg-proxy ${info.version} (pid ${info.pid}); this one would listen on ${next}, ` +
    `which does not take every connection ${current} takes: once it took over, clients of ${current} would be refused. ` +
    `Start it with --host ${current} (or a wildcard address), or stop that one first`
  );
}

/** Before listening: hold the port's control socket, or find who holds it. */
export async function claimPort(
  config: ProxyConfig,
  env: Readonly<Record<string, string | undefined>>,
  warn: (text: string) => void,
  addressesOf: ListenAddresses = resolvedAddresses,
): Promise<PortClaim> {
  if (config.port === 0) return { kind: "unguarded" };
  const { dir, note } = runtimeDirOf(config.runtimeDir, env);
  if (note !== undefined) warn(note);
  const path = controlSocketPath(dir, config.port);
  const claim = await claimControlSocket(path);
  if ("held" in claim) {
    const listener = await listenerOn(config.bindHost ?? config.host, config.port);
    if (listener === undefined) return { kind: "held", control: claim.held };
    claim.held.close();
    return {
      kind: "refused",
      message:
        `cannot listen on ${listener}: the port is already in use, by a process that holds no control socket in ${dir} ` +
        "(a disagg-proxy started with another --runtime-dir, $XDG_RUNTIME_DIR or $RUNTIME_DIRECTORY, or another program): " +
        "stop it, or give this one its runtime directory (--runtime-dir) to be refused or to take it over",
    };
  }
  const info = processInfoOf(await claim.holder.request({ op: "hello" }, CONTROL_TIMEOUT_MS));
  if (!config.takeOver) {
    claim.holder.close();
    return {
      kind: "refused",
      message:
        `port ${config.port} is already served by disagg-proxy ${info.version} (pid ${info.pid}, started ${info.startedAt}; control socket ${path}): ` +
        "start this one with --take-over to replace it without refusing a connection, or stop that one first",
    };
  }
  const narrower = await narrowerListen(config, info, addressesOf).catch((error: unknown) => {
    claim.holder.close();
    throw error;
  });
  if (narrower !== undefined) {
    claim.holder.close();
    return { kind: "refused", message: narrower };
  }
  const state = await claim.holder.request({ op: "state" }, CONTROL_TIMEOUT_MS).finally(() => claim.holder.close());
  // The release comes on a connection of its own: the holder closes one idle while this process gets ready.
  return { kind: "taking-over", path, predecessor: predecessorOf(path, info, handedItems(state["registrations"])) };
}

/** The old process's answer to a release it already granted to another process. */
const ALREADY_RELEASED = "already released";

/** The old process answered the release, and kept the port: this one must not serve it. */
export class ReleaseRefused extends Error {}

/**
 * The old process released the port to another process that was taking it over at the same
 * time (two upgrades started at once): that one serves, this one must not.
 */
export class ReleasedToAnother extends ReleaseRefused {}

function predecessorOf(path: string, info: ProcessInfo, registrations: HandedItem[]): Predecessor {
  return {
    info,
    registrations,
    async release() {
      const holder = await connectControlSocket(path);
      if (holder === undefined) throw new Error(`nobody holds ${path} any more`);
      const reply = await holder.request({ op: "release", pid: process.pid }, CONTROL_TIMEOUT_MS).finally(() => holder.close());
      if (reply["error"] === ALREADY_RELEASED)
        throw new ReleasedToAnother(
          `the old process (pid ${info.pid}) released the port to another process taking it over at the same time`,
        );
      if (reply["released"] !== true)
        throw new ReleaseRefused(`the old process (pid ${info.pid}) kept the port: ${JSON.stringify(reply["error"] ?? "no reason given")}`);
      return handedItems(reply["registrations"]);
    },
  };
}

/** Where a take-over ends: this process holds the port's control socket, serves without it, or leaves the port to another. */
export type AfterRelease =
  | { readonly kind: "held"; readonly control: ControlServer }
  | { readonly kind: "unheld"; readonly reason: string }
  | { readonly kind: "lost"; readonly reason: string };

/**
 * After the release, this one holds the port's control socket. When a live process holds it
 * instead: if the old process released the port to this one, that is a third process that took
 * the path in the moment between, and this one serves on (only a later take-over or the refusal
 * of a second copy needs the socket); if the release went unanswered (the old process exited
 * meanwhile), that is the process which took the port over, and this one leaves it, so that no
 * process serves the port that a later take-over cannot replace.
 */
export async function holdAfterRelease(path: string, released: boolean): Promise<AfterRelease> {
  try {
    const claim = await claimControlSocket(path);
    if ("held" in claim) return { kind: "held", control: claim.held };
    const holder = await claim.holder.request({ op: "hello" }, CONTROL_TIMEOUT_MS).then(
      (reply) => `pid ${String(reply["pid"])}`,
      () => "another process",
    );
    claim.holder.close();
    const reason = `${holder} holds ${path}`;
    return released ? { kind: "unheld", reason } : { kind: "lost", reason };
  } catch (error) {
    return { kind: "unheld", reason: `cannot hold ${path}: ${error instanceof Error ? error.message : String(error)}` };
  }
}

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
  await steps.listen();
  const lost = await releaseAndHold(steps);
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

function processInfoOf(reply: Record<string, unknown>): ProcessInfo {
  const { pid, version, startedAt, host } = reply;
  if (typeof pid !== "number" || typeof version !== "string" || typeof startedAt !== "string") {
    throw new Error(`the control socket's holder answered ${JSON.stringify(reply).slice(0, 200)}, not a disagg-proxy hello`);
  }
  return typeof host === "string" ? { pid, version, startedAt, host } : { pid, version, startedAt };
}

function handedItems(value: unknown): HandedItem[] {
  if (!Array.isArray(value)) return [];
  return value.flatMap((item: unknown): HandedItem[] => {
    if (!isJsonObject(item)) return [];
    const { key, value: text, ttlMs, from } = item;
    if (typeof key !== "string" || typeof text !== "string") return [];
    return [{ key, value: text, ttlMs: typeof ttlMs === "number" ? ttlMs : undefined, from: typeof from === "string" ? from : undefined }];
  });
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
