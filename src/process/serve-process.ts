/**
 * The serve command's process: it claims the port (or finds the process to take over from),
 * starts the proxy and its event loops, answers signals, and once the workers are checked
 * either serves, takes the port over, or exits. main.ts exits the process; this file asks it to
 * (`exit`). The upgrade's story is in docs/upgrading.md.
 */

import { unresolvedName } from "../config/named-hosts.ts";
import type { ProxyConfig } from "../config/types.ts";
import { claimNodeId } from "../discovery/index.ts";
import { withLoops } from "../loops/all-loops.ts";
import { EventLoops } from "../loops/event-loops.ts";
import type { Logger, Sink } from "../observability/logger.ts";
import { logStartupNotes, workerWaitEnded, type Command, type CommandRun, type Exit } from "../command-run.ts";
import { ListenError } from "../server/listener.ts";
import { startProxy, type RunningProxy } from "../server/serve.ts";
import type { ProcessInfo } from "./control-messages.ts";
import type { ControlServer } from "./control-socket.ts";
import { holdPort } from "./port-release.ts";
import { announce, writeReportAddress } from "./report-address.ts";
import { notifyReady } from "./sd-notify.ts";
import { claimPort, type PortClaim, type Predecessor } from "./take-over.ts";
import { takeOverOnceReady } from "./take-over-ready.ts";
import { reloadConfig } from "./reload.ts";

/** How long the start-up check of the configured host names may wait on one name. */
const NAME_LOOKUP_TIMEOUT_MS = 10_000;

/** What `serve` was started with: its config, the notes and warnings parsing it gave. */
export type ServeCommand = Command;

export interface ServeRun extends CommandRun<ServeCommand> {
  /** Where extra event loops' lines go out (one writer, none lost at exit). */
  readonly stdout: Sink;
  /** Start-up warnings besides the command's own (the HTTP capacity). */
  readonly warnings: readonly string[];
}

/** A node id claimed in etcd for this replica, released as the process ends. */
type NodeIdClaim = { readonly nodeId: number; release(): Promise<void> } | undefined;

/** `disagg-proxy serve`, from the port's claim to the end of the worker wait. */
export async function runServe(run: ServeRun): Promise<void> {
  const { command, logger, exit } = run;
  const unresolved = await unresolvedName(command.config, (host) => Bun.dns.lookup(host), NAME_LOOKUP_TIMEOUT_MS);
  if (unresolved !== undefined) exit(2, unresolved);
  const info = {
    pid: process.pid,
    version: run.version,
    startedAt: new Date().toISOString(),
    host: command.config.bindHost ?? command.config.host,
  };
  const port = await claimPortOrExit(command.config, logger, exit);
  const predecessor = port.kind === "taking-over" ? port.predecessor : undefined;
  const claim = await claimedNodeId(command.config, logger);
  const config = claim === undefined ? command.config : { ...command.config, nodeId: claim.nodeId };
  const loops = config.numWorkers > 1 ? new EventLoops(logger, run.stdout) : undefined;
  // Taking over, it listens only once its workers are ready.
  const mainLoop = await startOrExit(config, run, predecessor, loops);
  // What signals and an upgrade's release do, they do to every event loop.
  const proxy = loops === undefined ? mainLoop : withLoops(mainLoop, loops);
  await new ServeProcess({ run, info, config, proxy, loops, claim }).serve(port);
}

/** The serve process's state once the proxy runs: stopping (a signal or a release came) and whether its workers were ready. */
class ServeProcess {
  #stopping = false;
  #ready = false;

  readonly run: ServeRun;
  /** What this process tells a successor about itself (hello). */
  readonly info: ProcessInfo;
  readonly config: ProxyConfig;
  readonly proxy: RunningProxy;
  readonly loops: EventLoops | undefined;
  readonly claim: NodeIdClaim;

  constructor(parts: Pick<ServeProcess, "run" | "info" | "config" | "proxy" | "loops" | "claim">) {
    ({ run: this.run, info: this.info, config: this.config, proxy: this.proxy, loops: this.loops, claim: this.claim } = parts);
  }

  async serve(port: PortClaim): Promise<void> {
    const { run, config, proxy } = this;
    const predecessor = port.kind === "taking-over" ? port.predecessor : undefined;
    logStartupNotes(run.logger, run.command.notes, [...run.command.warnings, ...run.warnings]);
    logClientKeys(config, proxy, run.logger);
    if (predecessor === undefined) this.listening();
    process.on("SIGTERM", () => this.drain());
    process.on("SIGINT", () => this.drain());
    let running = run.command.config;
    process.on("SIGHUP", () => {
      running = reloadConfig(proxy, run.reread, running, run.logger);
    });
    if (port.kind === "held") this.hold(port.control);
    if (predecessor === undefined) notifyReady(run.logger);
    else
      run.logger.info("taking over the port once the workers are ready", {
        from_pid: predecessor.info.pid,
        from_version: predecessor.info.version,
        registrations: predecessor.registrations.length,
      });
    this.#ready = await proxy.waitForWorkers();
    // A signal ended the wait: the drain handler exits 0; this is no timeout.
    if (this.#stopping) return;
    if (port.kind === "taking-over") return this.takeOver(port);
    if (workerWaitEnded(this.#ready, config, run.logger) === "serving") return;
    await proxy.stop();
    run.exit(1);
  }

  /** Listening on the port: announced, the address reported, then the extra event loops start. */
  listening(): void {
    const { config, proxy, run } = this;
    announce(proxy.url, config.port);
    if (config.reportAddrFile !== undefined) writeReportAddress(config.reportAddrFile, config.host, proxy.url);
    // `url` is the bound address; `advertised` the name other machines are given (hostname, as --report-addr writes it).
    run.logger.notice("listening", {
      url: proxy.url.origin,
      advertised: `${config.host}:${proxy.url.port}`,
      schedule: config.schedule,
      max_retries: config.maxRetries,
      node_id: config.nodeId,
      event_loops: config.numWorkers,
    });
    // The other loops bind the port this one got (port 0 resolved), with the same config, each
    // once its own health checks found the workers: meanwhile this loop serves alone.
    this.loops
      ?.start(Bun.main, { ...config, port: Number(proxy.url.port) }, config.numWorkers - 1)
      .catch((error: unknown) => run.exit(1, `cannot start the event loops: ${error instanceof Error ? error.message : String(error)}`));
  }

  /** SIGTERM, SIGINT: drain once, then exit 0. */
  drain(): void {
    if (this.#stopping) return;
    this.#stopping = true;
    if (!this.#ready) this.run.logger.info("stopped before workers were ready");
    this.finish(this.proxy.drain(this.config.drainTimeoutMs));
  }

  /** Exits 0 once `done` (the node id released), 1 if it failed. */
  finish(done: Promise<void>): void {
    done
      .then(() => this.claim?.release())
      .then(
        () => {
          this.run.logger.notice("drained, exiting", { exit_code: 0 });
          return this.run.exit(0);
        },
        () => this.run.exit(1),
      );
  }

  /** Holds the port's control socket: a new process may ask for the port, and this one then drains. */
  hold(control: ControlServer): void {
    holdPort(control, {
      info: this.info,
      proxy: this.proxy,
      drainTimeoutMs: this.config.drainTimeoutMs,
      logger: this.run.logger,
      onReleased: (finished) => {
        this.#stopping = true;
        this.finish(finished);
      },
    });
  }

  /** The new side of an upgrade, its workers checked: it serves, or gives up (exit 1). */
  async takeOver(port: Extract<PortClaim, { kind: "taking-over" }>): Promise<void> {
    const { config, proxy, run } = this;
    const listen = async (): Promise<void> => {
      await listenOrExit(proxy, config, port.predecessor, run.exit);
      this.listening();
    };
    const end = await takeOverOnceReady(
      { proxy, port, config, logger: run.logger, listen, hold: (control) => this.hold(control) },
      this.#ready,
    );
    if (end === "serving") return;
    if (end === "abandoned") {
      await proxy.stop();
      run.exit(1);
    }
    this.#stopping = true;
    await proxy.drain(config.drainTimeoutMs);
    await this.claim?.release();
    run.exit(1);
  }
}

/** A second copy on a held port exits 2 (systemd does not restart it) before it listens. */
async function claimPortOrExit(config: ProxyConfig, logger: Logger, exit: Exit): Promise<PortClaim> {
  try {
    const port = await claimPort(config, process.env, (text) => logger.warn(text));
    if (port.kind === "refused") return exit(2, port.message);
    return port;
  } catch (error) {
    return exit(2, `cannot claim port ${config.port}'s control socket: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** Starts the proxy; it listens at once unless it takes over. */
async function startOrExit(
  config: ProxyConfig,
  run: ServeRun,
  predecessor: Predecessor | undefined,
  loops: EventLoops | undefined,
): Promise<RunningProxy> {
  const loop = loops?.share;
  try {
    return startProxy(
      config,
      run.logger,
      run.version,
      predecessor === undefined ? { loop } : { loop, registrations: predecessor.registrations, deferListen: true },
    );
  } catch (error) {
    return listenFailure(error, config, predecessor, run.exit);
  }
}

async function listenOrExit(proxy: RunningProxy, config: ProxyConfig, predecessor: Predecessor | undefined, exit: Exit): Promise<void> {
  try {
    proxy.listen();
  } catch (error) {
    await listenFailure(error, config, predecessor, exit);
  }
}

/** A listen failure is a configuration error: it names host, port and cause and exits 2. */
async function listenFailure(failure: unknown, config: ProxyConfig, predecessor: Predecessor | undefined, exit: Exit): Promise<never> {
  if (!(failure instanceof ListenError)) throw failure;
  const error = failure;
  if (predecessor !== undefined && error.code === "EADDRINUSE") {
    return exit(
      2,
      `${error.message}: the running disagg-proxy ${predecessor.info.version} (pid ${predecessor.info.pid}) does not share its port; restart it once instead`,
    );
  }
  // Bun says EINVAL both for a name that does not resolve and for other bad addresses: look.
  const host = config.bindHost ?? config.host;
  const resolves =
    error.code === "EINVAL"
      ? await Bun.dns.lookup(host).then(
          () => true,
          () => false,
        )
      : false;
  return exit(2, resolves ? `cannot listen on ${host}:${error.port}: invalid address (${String(error.cause)})` : error.message);
}

/** Replicas sharing a cluster each claim a distinct node id in etcd, so their ids never collide. */
async function claimedNodeId(config: ProxyConfig, logger: Logger): Promise<NodeIdClaim> {
  if (!config.claimNodeId || config.discovery?.kind !== "cluster" || config.discovery.storage !== "etcd") return undefined;
  const { endpoint, clusterName, leaseTtlMs } = config.discovery;
  return claimNodeId({ endpoint, clusterName, ttlMs: leaseTtlMs, logger });
}

/** Which client keys the proxy takes, once at start (a reload's line says it again). */
function logClientKeys(config: ProxyConfig, proxy: RunningProxy, logger: Logger): void {
  const keys = proxy.app.clientKeys;
  if (keys === undefined) logger.info("client keys: none, client authentication is off");
  else
    logger.info("client keys", {
      file: config.apiKeyFile ?? "DISAGG_PROXY_API_KEYS",
      keys: keys.size,
      ...(config.apiKeyFile !== undefined && (config.apiKeysFromEnv?.trim() ?? "") !== "" ? { also: "DISAGG_PROXY_API_KEYS" } : {}),
    });
}
