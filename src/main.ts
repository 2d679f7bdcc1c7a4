import { parseCommandLine, VERSION, type Command } from "./cli.ts";
import { ConfigError, UsageError } from "./config/errors.ts";
import { demoBanner, startDemo } from "./demo.ts";
import { startEmulatedWorker } from "./emulator/index.ts";
import { createLogger, type Logger } from "./observability/logger.ts";
import { startProxy, type RunningProxy } from "./server/serve.ts";

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
  switch (command.kind) {
    case "help":
      process.stdout.write(command.text);
      return;
    case "version":
      process.stdout.write(`disagg-proxy ${VERSION}\n`);
      return;
    case "worker":
      runWorker(command);
      return;
    case "demo":
      await runDemo(command.port);
      return;
    case "serve":
      await runServe(command, argv);
  }
}

async function runServe(command: Extract<Command, { kind: "serve" }>, argv: readonly string[]): Promise<void> {
  const logger = createLogger(command.config.logLevel);
  keepServingOnStrayRejections(logger);
  const proxy = startProxy(command.config, logger, VERSION);
  announce(proxy.url, command.config.port);
  for (const warning of command.warnings) logger.warn(warning);
  logger.info("listening", { url: proxy.url.origin, schedule: command.config.schedule, max_retries: command.config.maxRetries });
  const drain = (): void => {
    proxy.drain(command.config.drainTimeoutMs).then(
      () => exit(0),
      () => exit(1),
    );
  };
  process.once("SIGTERM", drain);
  process.once("SIGINT", drain);
  process.on("SIGHUP", () => reload(proxy, argv, logger));
  if (!(await proxy.waitForWorkers())) {
    logger.error("Timeout waiting for context and generation servers to be ready");
    await proxy.stop();
    exit(1);
  }
}

/** SIGHUP: the config file and flags are read again; only the worker lists take effect. */
function reload(proxy: RunningProxy, argv: readonly string[], logger: Logger): void {
  try {
    const next = parseCommandLine([...argv]);
    if (next.kind !== "serve") return;
    proxy.replaceWorkers(next.config.contextServers, next.config.generationServers);
    proxy.reloadTls();
  } catch (error) {
    logger.error("reload failed: keeping the current workers", { error });
  }
}

function runWorker(command: Extract<Command, { kind: "worker" }>): void {
  const worker = startEmulatedWorker(command.options);
  process.stdout.write(`${worker.url}\n`);
  stopOnSignals(() => worker.stop());
}

async function runDemo(port: number): Promise<void> {
  const logger = createLogger("info");
  keepServingOnStrayRejections(logger);
  const demo = await startDemo(port, logger, VERSION);
  process.stdout.write(demoBanner(demo));
  stopOnSignals(() => demo.stop());
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

main(Bun.argv.slice(2)).catch((error: unknown) => {
  exit(1, error instanceof Error ? error.message : String(error));
});
