/**
 * Command line → what main.ts should do. Throws UsageError (bad words) or ConfigError (bad
 * settings); main.ts prints their message and exits 2. Nothing here starts anything.
 */

import { VERSION } from "./build-info.ts";
import { OPTIONS } from "./config/cli-options.ts";
import { ConfigError, UsageError } from "./config/errors.ts";
import { parseSection, usedSpelling } from "./config/flag-values.ts";
import { loadConfig, systemLoadDeps, type LoadDeps, type StartupNote } from "./config/load.ts";
import { DEMO_PORT, type ProxyConfig } from "./config/types.ts";
import { usageText, type Command as CommandName } from "./config/usage.ts";
import { workerRegistration, type WorkerRegistrationSettings } from "./config/worker-registration.ts";
import type { WorkerFlags } from "./config/cli-options.ts";

export { ConfigError, OPTIONS, UsageError, usageText };
export type { StartupNote, WorkerRegistrationSettings };

/** A worker's flags without the command's own words and its registration (which main.ts injects). */
export type EmulatedWorkerFlags = Omit<WorkerFlags, "help" | "version" | "role" | "register" | "clusterName" | "heartbeatMs" | "ttlMs">;

export { VERSION };

export type Command =
  | { kind: "serve"; config: ProxyConfig; warnings: string[]; notes: StartupNote[] }
  | {
      kind: "coordinator";
      config: ProxyConfig;
      port: number;
      /** A `unix:/path.sock` disagg_coordinator_url: the socket served beside the port. */
      socketPath: string | undefined;
      reservationTimeoutMs: number;
      warnings: string[];
      notes: StartupNote[];
    }
  | { kind: "worker"; role: NonNullable<WorkerFlags["role"]>; flags: EmulatedWorkerFlags; register: WorkerRegistrationSettings | undefined }
  | { kind: "demo"; port: number }
  | { kind: "help"; text: string }
  | { kind: "version" };

/** Command words; `disaggregated` lets `trtllm-serve disaggregated …` command lines carry over. */
const COMMAND_WORDS: Readonly<Record<string, CommandName>> = {
  serve: "serve",
  disaggregated: "serve",
  coordinator: "coordinator",
  worker: "worker",
  demo: "demo",
};

/**
 * `argv` is the user's words only (`Bun.argv.slice(2)`). A leading word that is not a flag
 * is the command; without one the command is serve.
 */
export function parseCommandLine(argv: readonly string[], deps: LoadDeps = systemLoadDeps()): Command {
  const first = argv[0];
  const named = first !== undefined && !first.startsWith("-");
  const command = named ? commandOf(first) : "serve";
  try {
    return parseFor(command, named ? argv.slice(1) : argv, named, deps);
  } catch (error) {
    // Attach the usage of the command the user tried, so the hint fits what they typed.
    if (error instanceof UsageError && error.usage === "")
      throw new UsageError(error.message, usageText(VERSION, command), `disagg-proxy ${command} --help`);
    throw error;
  }
}

function commandOf(word: string): CommandName {
  const command = COMMAND_WORDS[word];
  if (command === undefined) {
    throw new UsageError(`Unknown command "${word}" (expected serve, coordinator, worker or demo)`, usageText(VERSION));
  }
  return command;
}

type Parser = (args: readonly string[], named: boolean, deps: LoadDeps) => Command;

const PARSERS: Readonly<Record<CommandName, Parser>> = {
  serve: parseServe,
  coordinator: parseCoordinator,
  worker: parseWorker,
  demo: parseDemo,
};

function parseFor(command: CommandName, args: readonly string[], named: boolean, deps: LoadDeps): Command {
  return PARSERS[command](args, named, deps);
}

function parseServe(args: readonly string[], named: boolean, deps: LoadDeps): Command {
  // Accepted so trtllm-serve's command lines carry over; they change nothing here.
  const { help, version, telemetry: _telemetry, noTelemetry: _noTelemetry, metricsLogIntervalS, ...flags } = parseSection("serve", args);
  // Bare `--help` is the overview; `serve --help` is serve's own page.
  if (help === true) return { kind: "help", text: usageText(VERSION, named ? "serve" : undefined) };
  if (version === true) return { kind: "version" };
  const { config, warnings, notes } = loadConfig(flags, deps);
  return { kind: "serve", config, warnings, notes: [...notes, ...launchLineNotes(args, metricsLogIntervalS)] };
}

/** What the launch line's upstream-only words mean here, for the start-up log. */
function launchLineNotes(args: readonly string[], metricsLogIntervalS: number | undefined): StartupNote[] {
  const notes: StartupNote[] = [];
  if (usedSpelling("serve", args, "config_file")) {
    notes.push({ level: "debug", text: "--config_file is trtllm-serve's older spelling of -c/--config" });
  }
  if (metricsLogIntervalS !== undefined && metricsLogIntervalS > 0) {
    notes.push({
      level: "info",
      text: `--metrics-log-interval ${metricsLogIntervalS}: no periodic statistics lines are logged here; GET /prometheus/metrics has the same figures`,
    });
  }
  return notes;
}

/** Upstream's reservation timeout (disagg_coordinator.py @ 0186c597 COORDINATOR_RESERVATION_TIMEOUT_DEFAULT_S). */
const RESERVATION_TIMEOUT_MS = 180_000;

function parseCoordinator(args: readonly string[], _named: boolean, deps: LoadDeps): Command {
  const {
    help,
    version,
    telemetry: _telemetry,
    noTelemetry: _noTelemetry,
    metricsLogIntervalS: _interval,
    reservationTimeoutMs,
    ...flags
  } = parseSection("coordinator", args);
  if (help === true) return { kind: "help", text: usageText(VERSION, "coordinator") };
  if (version === true) return { kind: "version" };
  // num_workers is the serving processes' setting: the coordinator is one process, as upstream's (uvicorn workers=1).
  const { config, warnings, notes } = loadConfig({ ...flags, numWorkers: 1 }, deps);
  const port = flags.port ?? coordinatorPortOf(config);
  const timeout = reservationTimeoutMs ?? envSeconds(deps.env, "TRTLLM_DISAGG_COORDINATOR_RESERVATION_TIMEOUT") ?? RESERVATION_TIMEOUT_MS;
  // Upstream's coordinator serves a Unix socket for the co-located fleet and TCP for health and others (coordinator_server.py D).
  const socketPath =
    config.disaggCoordinatorUrl?.startsWith("unix:") === true ? config.disaggCoordinatorUrl.slice("unix:".length) : undefined;
  return { kind: "coordinator", config, port, socketPath, reservationTimeoutMs: timeout, warnings, notes };
}

/**
 * Where the coordinator listens without --port: the port of the YAML's disagg_coordinator_url
 * (the file the serving processes share names it), else of an http:// disagg_cluster.cluster_uri
 * (its storage), else upstream's implicit coordinator's address, the serving processes' port - 1
 * (docs: "Coordinator and Worker Fleet").
 */
function coordinatorPortOf(config: ProxyConfig): number {
  const discovery = config.discovery;
  // The HTTP cluster storage it serves is where workers register: the cluster_uri names its address too.
  const storage = discovery?.kind === "cluster" && discovery.storage === "http" ? discovery.endpoint : undefined;
  for (const url of [config.disaggCoordinatorUrl, storage]) {
    if (url === undefined || !/^https?:\/\//.test(url)) continue;
    const parsed = new URL(url);
    return parsed.port === "" ? (parsed.protocol === "https:" ? 443 : 80) : Number(parsed.port);
  }
  return Math.max(config.port - 1, 0);
}

/** A positive number of seconds from the environment, in ms; unset or empty: undefined. */
function envSeconds(env: LoadDeps["env"], name: string): number | undefined {
  const text = env[name];
  if (text === undefined || text.trim() === "") return undefined;
  const seconds = Number(text);
  if (!(seconds > 0) || !Number.isFinite(seconds)) throw new ConfigError(`Invalid ${name}: "${text}" (expected a number of seconds > 0)`);
  return Math.round(seconds * 1000);
}

function parseWorker(args: readonly string[]): Command {
  const all = parseSection("worker", args);
  const { help, version, role, register: _uri, clusterName: _name, heartbeatMs: _heartbeat, ttlMs: _ttl, ...flags } = all;
  if (help === true) return { kind: "help", text: usageText(VERSION, "worker") };
  if (version === true) return { kind: "version" };
  // parseSection already refused a missing --role; this narrows the type.
  if (role === undefined) throw new UsageError("worker needs --role");
  return { kind: "worker", role, flags, register: workerRegistration(all) };
}

function parseDemo(args: readonly string[]): Command {
  const { help, version, port } = parseSection("demo", args);
  if (help === true) return { kind: "help", text: usageText(VERSION, "demo") };
  if (version === true) return { kind: "version" };
  return { kind: "demo", port: port ?? DEMO_PORT };
}
