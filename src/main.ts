import { versionLine } from "./build-info.ts";
import { parseCommandLine, VERSION, type Command } from "./cli.ts";
import { ConfigError, UsageError } from "./config/errors.ts";
import { unresolvedName } from "./config/named-hosts.ts";
import type { ProxyConfig } from "./config/types.ts";
import { claimNodeId, etcdRegistrar, httpRegistrar } from "./discovery/index.ts";
import { ensureHttpCapacity, type CapacityState } from "./http-capacity.ts";
import { batchedStdout, createLogger, type Logger } from "./observability/logger.ts";
import { ListenError } from "./server/listener.ts";
import { startProxy, type RunningProxy } from "./server/serve.ts";
import { startCoordinator, type RunningCoordinator } from "./coordinator/run.ts";
import { withLoops } from "./loops/all-loops.ts";
import { EventLoops, isLoopData } from "./loops/event-loops.ts";
import { runExtraLoop } from "./loops/extra-loop.ts";
import { isMainThread, parentPort, workerData } from "node:worker_threads";
import { writeReportAddress } from "./process/report-address.ts";
import type { ControlServer } from "./process/control-socket.ts";
import { notifyReady } from "./process/sd-notify.ts";
import { holdPort } from "./process/port-release.ts";
import { claimPort, type PortClaim, type Predecessor } from "./process/take-over.ts";
import { takeOverOnceReady } from "./process/take-over-ready.ts";

/** How long the start-up check of the configured host names may wait on one name. */
const NAME_LOOKUP_TIMEOUT_MS = 10_000;

/** argv → serve | worker | demo. The only place that exits the process. */
async function main(argv: readonly string[]): Promise<void> {
  let command: Command;
  try {
    command = parseCommandLine([...argv]);
  } catch (error) {
    if (error instanceof UsageError) exit(2, error.usage ? `${error.message}\n\n${error.usage}` : error.message);
    if (error instanceof ConfigError) exit(2, error.message);
    throw error;
  }
  // The proxy's worker calls need more than the runtime's default 256 at once.
  const capacity = command.kind === "serve" || command.kind === "demo" ? ensureHttpCapacity() : { ready: true as const };
  switch (command.kind) {
    case "help":
      process.stdout.write(command.text);
      return;
    case "version":
      process.stdout.write(`${versionLine()}\n`);
      return;
    case "worker":
      await runWorker(command);
      return;
    case "demo":
      await runDemo(command.port, capacity);
      return;
    case "coordinator":
      await runCoordinator(command, argv);
      return;
    case "serve":
      await runServe(command, argv, capacity);
  }
}

async function runServe(command: Extract<Command, { kind: "serve" }>, argv: readonly string[], capacity: CapacityState): Promise<void> {
  const stdout = batchedStdout();
  const logger = createLogger(command.config.logLevel, stdout);
  keepServingOnStrayRejections(logger);
  const unresolved = await unresolvedName(command.config, (host) => Bun.dns.lookup(host), NAME_LOOKUP_TIMEOUT_MS);
  if (unresolved !== undefined) exit(2, unresolved);
  const info = {
    pid: process.pid,
    version: VERSION,
    startedAt: new Date().toISOString(),
    host: command.config.bindHost ?? command.config.host,
  };
  const port = await claimPortOrExit(command.config, logger);
  const predecessor = port.kind === "taking-over" ? port.predecessor : undefined;
  const claim = await claimedNodeId(command.config, logger);
  const config = claim === undefined ? command.config : { ...command.config, nodeId: claim.nodeId };
  // Extra loops' log lines come here and go out through this thread's stdout: one writer, none lost at exit.
  const loops = config.numWorkers > 1 ? new EventLoops(logger, stdout) : undefined;
  // Taking over, it listens only once its workers are ready (below).
  const mainLoop = await startOrExit(config, logger, predecessor, loops);
  // What signals and an upgrade's release do, they do to every event loop.
  const proxy = loops === undefined ? mainLoop : withLoops(mainLoop, loops);
  const listening = (): void => {
    announce(proxy.url, config.port);
    if (config.reportAddrFile !== undefined) writeReportAddress(config.reportAddrFile, config.host, proxy.url);
    // `url` is the bound address; `advertised` the name other machines are given (hostname, as --report-addr writes it).
    logger.info("listening", {
      url: proxy.url.origin,
      advertised: `${config.host}:${proxy.url.port}`,
      schedule: config.schedule,
      max_retries: config.maxRetries,
      node_id: config.nodeId,
      event_loops: config.numWorkers,
    });
    // The other loops bind the port this one got (port 0 resolved), with the same config, each
    // once its own health checks found the workers: meanwhile this loop serves alone.
    loops
      ?.start(Bun.main, { ...config, port: Number(proxy.url.port) }, config.numWorkers - 1)
      .catch((error: unknown) => exit(1, `cannot start the event loops: ${error instanceof Error ? error.message : String(error)}`));
  };
  for (const note of command.notes) logger[note.level](note.text);
  for (const warning of command.warnings) logger.warn(warning);
  warnOnLowCapacity(capacity, logger);
  if (predecessor === undefined) listening();
  let stopping = false;
  let ready = false;
  const finish = (done: Promise<void>): void => {
    done
      .then(() => claim?.release())
      .then(
        () => exit(0),
        () => exit(1),
      );
  };
  const drain = (): void => {
    if (stopping) return;
    stopping = true;
    if (!ready) logger.info("stopped before workers were ready");
    finish(proxy.drain(config.drainTimeoutMs));
  };
  process.on("SIGTERM", drain);
  process.on("SIGINT", drain);
  process.on("SIGHUP", () => reload(proxy, argv, logger));
  const hold = (control: ControlServer): void =>
    holdPort(control, {
      info,
      proxy,
      drainTimeoutMs: config.drainTimeoutMs,
      logger,
      onReleased(finished) {
        stopping = true;
        finish(finished);
      },
    });
  if (port.kind === "held") hold(port.control);
  if (predecessor === undefined) notifyReady(logger);
  else
    logger.info("taking over the port once the workers are ready", {
      from_pid: predecessor.info.pid,
      from_version: predecessor.info.version,
      registrations: predecessor.registrations.length,
    });
  ready = await proxy.waitForWorkers();
  if (stopping) return;
  if (port.kind === "taking-over") {
    const listenNow = async (): Promise<void> => {
      await listenOrExit(proxy, config, predecessor);
      listening();
    };
    const end = await takeOverOnceReady({ proxy, port, config, logger, listen: listenNow, hold }, ready);
    if (end === "serving") return;
    if (end === "abandoned") {
      await proxy.stop();
      exit(1);
    }
    stopping = true;
    await proxy.drain(config.drainTimeoutMs);
    await claim?.release();
    exit(1);
  }
  // A signal ended the wait: the drain handler exits 0; this is no timeout.
  if (ready) return;
  if (config.discovery !== undefined) {
    // Discovered workers may still register: keep serving, /health says 503 meanwhile.
    logger.warn("not enough workers ready yet; waiting for more to register");
    return;
  }
  logger.error("Timeout waiting for context and generation servers to be ready");
  await proxy.stop();
  exit(1);
}

/** A second copy on a held port exits 2 (systemd does not restart it) before it listens. */
async function claimPortOrExit(config: ProxyConfig, logger: Logger): Promise<PortClaim> {
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
  logger: Logger,
  predecessor: Predecessor | undefined,
  loops: EventLoops | undefined,
): Promise<RunningProxy> {
  const loop = loops?.share;
  try {
    return startProxy(
      config,
      logger,
      VERSION,
      predecessor === undefined ? { loop } : { loop, registrations: predecessor.registrations, deferListen: true },
    );
  } catch (error) {
    return listenFailure(error, config, predecessor);
  }
}

async function listenOrExit(proxy: RunningProxy, config: ProxyConfig, predecessor: Predecessor | undefined): Promise<void> {
  try {
    proxy.listen();
  } catch (error) {
    await listenFailure(error, config, predecessor);
  }
}

/** A listen failure is a configuration error: it names host, port and cause and exits 2. */
async function listenFailure(failure: unknown, config: ProxyConfig, predecessor: Predecessor | undefined): Promise<never> {
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
async function claimedNodeId(config: ProxyConfig, logger: Logger): Promise<{ nodeId: number; release(): Promise<void> } | undefined> {
  if (!config.claimNodeId || config.discovery?.kind !== "cluster" || config.discovery.storage !== "etcd") return undefined;
  const { endpoint, clusterName, leaseTtlMs } = config.discovery;
  return claimNodeId({ endpoint, clusterName, ttlMs: leaseTtlMs, logger });
}

/** SIGHUP: the config file and flags are read again; only the worker lists take effect. */
function reload(proxy: RunningProxy, argv: readonly string[], logger: Logger): void {
  try {
    const next = parseCommandLine([...argv]);
    if (next.kind !== "serve") return;
    proxy.replaceWorkers(next.config.contextServers, next.config.generationServers);
    proxy.reloadTls();
    proxy.app.reloadClientKeys();
  } catch (error) {
    logger.error("reload failed: keeping the current workers", { error });
  }
}

/** `disagg-proxy coordinator`: listens at once, then waits for the workers as serve does; SIGTERM stops it, SIGHUP re-reads the worker lists. */
async function runCoordinator(command: Extract<Command, { kind: "coordinator" }>, argv: readonly string[]): Promise<void> {
  const { config } = command;
  const logger = createLogger(config.logLevel, batchedStdout());
  keepServingOnStrayRejections(logger);
  for (const note of command.notes) logger[note.level](note.text);
  for (const warning of command.warnings) logger.warn(warning);
  let coordinator: RunningCoordinator;
  try {
    coordinator = startCoordinator(config, { port: command.port, reservationTimeoutMs: command.reservationTimeoutMs }, logger, VERSION);
  } catch (error) {
    if (error instanceof ListenError) exit(2, error.message);
    throw error;
  }
  announce(coordinator.url, command.port);
  logger.info("coordinator listening", {
    url: coordinator.url.origin,
    context_router: config.contextRouter,
    generation_router: config.generationRouter,
    reservation_timeout_s: command.reservationTimeoutMs / 1000,
    node_id: config.nodeId,
  });
  const stop = (): void => {
    coordinator.stop().then(
      () => exit(0),
      () => exit(1),
    );
  };
  process.once("SIGTERM", stop);
  process.once("SIGINT", stop);
  process.on("SIGHUP", () => {
    try {
      const next = parseCommandLine([...argv]);
      if (next.kind === "coordinator") coordinator.replaceWorkers(next.config.contextServers, next.config.generationServers);
    } catch (error) {
      logger.error("reload failed: keeping the current workers", { error });
    }
  });
  if (await coordinator.waitForWorkers()) return;
  if (config.discovery !== undefined) return logger.warn("not enough workers ready yet; waiting for more to register");
  logger.error("Timeout waiting for context and generation servers to be ready");
  await coordinator.stop();
  exit(1);
}

/** The emulator is imported only here and by the demo: `serve` never loads it. */
async function runWorker(command: Extract<Command, { kind: "worker" }>): Promise<void> {
  const { emulatorOptions, startEmulatedWorker } = await import("./emulator/index.ts");
  const options = emulatorOptions(command.role, command.flags);
  const settings = command.register;
  if (settings !== undefined) {
    // Registration is the proxy's etcd or cluster storage client, handed to the emulator; its lines go to stderr.
    const logger = createLogger("warn", (line) => process.stderr.write(line));
    options.register =
      settings.storage === "http" ? httpRegistrar({ ...settings, uri: settings.endpoint, logger }) : etcdRegistrar({ ...settings, logger });
  }
  const worker = startEmulatedWorker(options);
  process.stdout.write(`${worker.url}\n`);
  stopOnSignals(() => worker.stop());
}

async function runDemo(port: number, capacity: CapacityState): Promise<void> {
  const logger = createLogger("info");
  warnOnLowCapacity(capacity, logger);
  keepServingOnStrayRejections(logger);
  const { demoBanner, startDemo } = await import("./demo.ts");
  const demo = await startDemo(port, logger, VERSION);
  process.stdout.write(demoBanner(demo));
  stopOnSignals(() => demo.stop());
}

/** Only where the process could not re-execute itself with the variable set. */
function warnOnLowCapacity(capacity: CapacityState, logger: Logger): void {
  if (capacity.ready) return;
  logger.warn(`at most 256 worker requests run at once (${capacity.reason}): set BUN_CONFIG_MAX_HTTP_REQUESTS=65535 in the environment`);
}

/** With --port 0 the bound URL is the first stdout line, so scripts and tests find the port. */
function announce(url: URL, requestedPort: number): void {
  if (requestedPort === 0) process.stdout.write(`${url.origin}\n`);
}

function stopOnSignals(stop: () => Promise<void>): void {
  const onSignal = (): void => {
    stop().then(
      () => exit(0),
      () => exit(1),
    );
  };
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
}

/** A stray rejection (e.g. from a stream's cancel) must not take every open stream down with it. */
function keepServingOnStrayRejections(logger: Logger): void {
  process.on("unhandledRejection", (reason) => logger.error("unhandled rejection", { error: reason }));
}

function exit(code: number, message?: string): never {
  if (message) process.stderr.write(`disagg-proxy: ${message}\n`);
  process.exit(code);
}

// num_workers > 1: the same program, started again as a Bun Worker, serves as an extra event loop.
const started =
  !isMainThread && parentPort !== null && isLoopData(workerData) ? runExtraLoop(workerData, parentPort, VERSION) : main(Bun.argv.slice(2));
started.catch((error: unknown) => {
  exit(1, error instanceof Error ? error.message : String(error));
});
