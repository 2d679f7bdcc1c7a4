/**
 * An upgrade without a refused connection (docs/upgrading.md). Both processes listen on the
 * port with SO_REUSEPORT; the per-port control socket (control-socket.ts) decides who may:
 *
 * 1. the new process (`--take-over`) connects to the old one's control socket, learns who it
 *    is and takes its HTTP cluster storage items (registered workers) before it listens;
 * 2. it listens beside the old one and waits until ready (its own start-up wait and checks);
 * 3. it asks the old one to release the port: the old one stops listening at once, answers
 *    with the items registered meanwhile, and drains; the new one takes the control socket.
 *
 * Without `--take-over` a second copy on a held port is refused before it listens. Steps 2 and 3
 * are take-over-ready.ts; the old process's side is port-release.ts.
 */

import type { StorageAnswer, StorageCall } from "../routes/deps.ts";
import type { ProxyConfig } from "../config/types.ts";
import type { HandedItem } from "../discovery/index.ts";
import {
  claimControlSocket,
  connectControlSocket,
  CONTROL_LIMITS,
  controlSocketPath,
  type ControlClient,
  type ControlServer,
} from "./control-socket.ts";
import { ALREADY_RELEASED, CONTROL_TIMEOUT_MS, handedItems, processInfoOf, type ProcessInfo } from "./control-messages.ts";
import { listenCovers, listenerOn, resolvedAddresses, type ListenAddresses } from "./listen-address.ts";
import { runtimeDirOf } from "./runtime-dir.ts";
import { socketHolder } from "./socket-holder.ts";

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
  /** A cluster storage call answered by it (it holds the registrations until it answers the release). */
  storage(call: StorageCall): Promise<StorageAnswer>;
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
  const claim = await claimOrExplain(path);
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
  const info = await helloOf(claim.holder, path);
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

/** Who holds the control socket; when it closes or says it is full before answering, an error that says so in words. */
async function helloOf(holder: ControlClient, path: string): Promise<ProcessInfo> {
  const unanswered = async (why: string): Promise<never> => {
    holder.close();
    throw await unansweredError(path, why);
  };
  const reply = await holder.request({ op: "hello" }, CONTROL_TIMEOUT_MS).catch((error: unknown) => unanswered(errorText(error)));
  const error = reply["error"];
  if (typeof error === "string") return unanswered(error);
  try {
    return processInfoOf(reply);
  } catch (failure) {
    return unanswered(errorText(failure));
  }
}

/** The control socket's holder closed the connection (at once, or before its answer), or answered no hello. */
async function unansweredError(path: string, why: string): Promise<Error> {
  const found = await socketHolder(path).catch(() => undefined);
  const who = found === undefined ? "a process this user cannot see" : `pid ${found.pid} (${found.command})`;
  return new Error(
    `the control socket ${path} is held by ${who}, which did not say who it is (${why}). A disagg-proxy takes ` +
      `${CONTROL_LIMITS.connections} control connections at once: another take-over may be under way, or a client holds them ` +
      `(ss -xp | grep ${path}); wait for it to end or stop it, then start this one again. If ${who} is no disagg-proxy, stop it`,
  );
}

/** A live holder that closed the connection as it opened (ECONNRESET, EPIPE) is said in words; anything else as it came. */
async function claimOrExplain(path: string): ReturnType<typeof claimControlSocket> {
  try {
    return await claimControlSocket(path);
  } catch (error) {
    const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined;
    if (code === "ECONNRESET" || code === "EPIPE") throw await unansweredError(path, errorText(error));
    throw error;
  }
}

function errorText(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

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
    async storage(call) {
      const holder = await connectControlSocket(path);
      if (holder === undefined) throw new Error(`nobody holds ${path} any more`);
      const reply = await holder.request({ op: "storage", call }, CONTROL_TIMEOUT_MS).finally(() => holder.close());
      const { status, body } = reply;
      if (typeof status !== "number" || typeof body !== "string")
        throw new Error(`the old process answered ${JSON.stringify(reply).slice(0, 200)}`);
      return { status, body };
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
