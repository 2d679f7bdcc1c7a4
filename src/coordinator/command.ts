import { logStartupNotes, workerWaitEnded, type Command, type CommandRun } from "../command-run.ts";
import { ListenError } from "../server/listener.ts";
import { startCoordinator, type RunningCoordinator } from "./run.ts";
import { removeStaleSocket } from "./stale-socket.ts";

/** What `coordinator` was started with. */
export interface CoordinatorCommand extends Command {
  readonly port: number;
  readonly socketPath: string | undefined;
  readonly reservationTimeoutMs: number;
}

export type CoordinatorRun = CommandRun<CoordinatorCommand>;

/** `disagg-proxy coordinator`: listens at once, then waits for the workers as serve does; SIGTERM stops it, SIGHUP re-reads the worker lists. */
export async function runCoordinator(run: CoordinatorRun): Promise<void> {
  const { command, exit, logger } = run;
  const { config } = command;
  logStartupNotes(logger, command.notes, command.warnings);
  if (command.socketPath !== undefined && (await removeStaleSocket(command.socketPath)))
    logger.warn("removed the socket file of a coordinator that did not stop (nothing listened on it)", { socket: command.socketPath });
  let coordinator: RunningCoordinator;
  try {
    coordinator = startCoordinator(
      config,
      { port: command.port, reservationTimeoutMs: command.reservationTimeoutMs, socketPath: command.socketPath },
      logger,
      run.version,
    );
  } catch (error) {
    if (error instanceof ListenError) exit(2, error.message);
    throw error;
  }
  // With --port 0 the bound URL is the first stdout line, so scripts and tests find the port.
  if (command.port === 0) process.stdout.write(`${coordinator.url.origin}\n`);
  logger.info("coordinator listening", {
    url: coordinator.url.origin,
    ...(command.socketPath === undefined ? {} : { socket: command.socketPath }),
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
      const next = run.reread();
      if (next !== undefined) coordinator.replaceWorkers(next.config.contextServers, next.config.generationServers);
    } catch (error) {
      // The reason in one line, never a stack (a bad file is the operator's to fix).
      logger.error("reload refused: keeping the current workers", { refused: error instanceof Error ? error.message : String(error) });
    }
  });
  if (workerWaitEnded(await coordinator.waitForWorkers(), config, logger) === "serving") return;
  await coordinator.stop();
  exit(1);
}
