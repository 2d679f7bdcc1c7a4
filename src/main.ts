import { versionLine } from "./build-info.ts";
import { parseCommandLine, VERSION, type Command } from "./cli.ts";
import { ConfigError, UsageError } from "./config/errors.ts";
import { runCoordinator } from "./coordinator/command.ts";
import { etcdRegistrar, httpRegistrar } from "./discovery/index.ts";
import { ensureHttpCapacity, type CapacityState } from "./http-capacity.ts";
import { isLoopData } from "./loops/event-loops.ts";
import { runExtraLoop } from "./loops/extra-loop.ts";
import { batchedStdout, createLogger, type Logger } from "./observability/logger.ts";
import { runServe } from "./process/serve-process.ts";
import { ListenError } from "./server/listener.ts";
import { isMainThread, parentPort, workerData } from "node:worker_threads";

/** argv → command → run: serve, coordinator, worker or demo. The only place that exits the process. */
async function main(argv: readonly string[]): Promise<void> {
  let command: Command;
  try {
    command = parseCommandLine([...argv]);
  } catch (error) {
    // One line and where help is: the whole usage would bury the mistake.
    if (error instanceof UsageError) exit(2, `${error.message}; see ${error.help}`);
    if (error instanceof ConfigError) exit(2, error.message);
    throw error;
  }
  // The proxy's worker calls need more than the runtime's default 256 at once.
  const capacity = command.kind === "serve" || command.kind === "demo" ? ensureHttpCapacity() : { ready: true as const };
  switch (command.kind) {
    case "help":
      return void process.stdout.write(command.text);
    case "version":
      return void process.stdout.write(`${versionLine()}\n`);
    case "worker":
      return runWorker(command);
    case "demo":
      return runDemo(command.port, capacity);
    case "coordinator":
    case "serve": {
      const stdout = batchedStdout();
      const logger = createLogger(command.config.logLevel, stdout);
      keepServingOnStrayRejections(logger);
      const run = { version: VERSION, logger, exit };
      if (command.kind === "coordinator") await runCoordinator({ ...run, command, reread: () => commandOf(argv, "coordinator") });
      else await runServe({ ...run, command, stdout, warnings: lowCapacityWarnings(capacity), reread: () => commandOf(argv, "serve") });
    }
  }
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
  let worker: ReturnType<typeof startEmulatedWorker>;
  try {
    worker = startEmulatedWorker(options);
  } catch (error) {
    const code = typeof error === "object" && error !== null && "code" in error ? error.code : undefined;
    if (code === "EADDRINUSE") exit(2, `cannot listen on ${options.host ?? "127.0.0.1"}:${options.port ?? 0}: the port is already in use`);
    throw error;
  }
  process.stdout.write(`${worker.url}\n`);
  stopOnSignals(() => worker.stop());
}

async function runDemo(port: number, capacity: CapacityState): Promise<void> {
  const logger = createLogger("info");
  for (const warning of lowCapacityWarnings(capacity)) logger.warn(warning);
  keepServingOnStrayRejections(logger);
  const { demoBanner, startDemo } = await import("./demo.ts");
  const demo = await startDemo(port, logger, VERSION).catch((error: unknown) => {
    if (error instanceof ListenError) return exit(2, `${error.message} (the demo never shares its port; give it another with --port)`);
    throw error;
  });
  process.stdout.write(demoBanner(demo));
  stopOnSignals(() => demo.stop());
}

/** Only where the process could not re-execute itself with the variable set. */
function lowCapacityWarnings(capacity: CapacityState): string[] {
  if (capacity.ready) return [];
  return [`at most 256 worker requests run at once (${capacity.reason}): set BUN_CONFIG_MAX_HTTP_REQUESTS=65535 in the environment`];
}

function stopOnSignals(stop: () => Promise<void>): void {
  const onSignal = (): void =>
    void stop()
      .then(() => exit(0))
      .catch(() => exit(1));
  process.once("SIGTERM", onSignal);
  process.once("SIGINT", onSignal);
}

/** The command line parsed again (SIGHUP): undefined when it no longer names `kind`. */
function commandOf<K extends Command["kind"]>(argv: readonly string[], kind: K): Extract<Command, { kind: K }> | undefined {
  return [parseCommandLine([...argv])].find((next): next is Extract<Command, { kind: K }> => next.kind === kind);
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
