import { describe, expect, test } from "bun:test";
import pkg from "../package.json" with { type: "json" };
import { flagTable } from "../scripts/flag-table.ts";
import { ConfigError, OPTIONS, parseCommandLine, UsageError, usageText, VERSION, type Command } from "./cli.ts";
import type { LoadDeps } from "./config/load.ts";

const YAML = `
hostname: 0.0.0.0
port: 8000
backend: pytorch
context_servers: { num_instances: 1, urls: ["localhost:8001"] }
generation_servers: { num_instances: 1, urls: ["localhost:8003"] }
`;

const DEPS: LoadDeps = {
  readFile: (path) => {
    if (path === "disagg.yaml") return YAML;
    if (path === "bad.yaml") return "port: abc";
    throw new Error(`ENOENT: no such file or directory, open '${path}'`);
  },
  env: {},
  defaultNodeId: () => 3,
};

const WORKERS = ["--context", "c:1", "--generation", "g:1"];

function parse(...argv: string[]): Command {
  return parseCommandLine(argv, DEPS);
}

function serve(...argv: string[]): Extract<Command, { kind: "serve" }> {
  const command = parse(...argv);
  if (command.kind !== "serve") throw new Error(`expected serve, got ${command.kind}`);
  return command;
}

function usageErrorOf(...argv: string[]): UsageError {
  try {
    parse(...argv);
  } catch (error) {
    if (error instanceof UsageError) return error;
    throw error;
  }
  throw new Error("expected a UsageError");
}

describe("usage text and flag table", () => {
  test("the usage text mentions every option of the table", () => {
    const text = usageText(VERSION);
    for (const spec of OPTIONS) {
      expect(text).toContain(`--${spec.name}`);
      if ("short" in spec) expect(text).toContain(`-${spec.short}, --${spec.name}`);
    }
  });

  test("each command's help page mentions each of its options", () => {
    for (const command of ["serve", "worker", "demo"] as const) {
      const help = parse(command, "--help");
      expect(help.kind).toBe("help");
      const text = help.kind === "help" ? help.text : "";
      for (const spec of OPTIONS.filter((o) => o.section === command || o.section === "global")) {
        expect(text).toContain(`--${spec.name}`);
      }
    }
  });

  test("the flag table of docs/configuration.md lists every option", () => {
    const table = flagTable();
    for (const spec of OPTIONS) expect(table).toContain(`--${spec.name}`);
  });
});

describe("commands", () => {
  test("bare flags mean serve; --help alone is the overview", () => {
    expect(serve(...WORKERS).config.contextServers).toEqual(["http://c:1"]);
    expect(parse("--help")).toEqual({ kind: "help", text: usageText(VERSION) });
    expect(parse("-h")).toEqual({ kind: "help", text: usageText(VERSION) });
  });

  test("--version, also after a command word", () => {
    expect(parse("--version")).toEqual({ kind: "version" });
    expect(parse("worker", "--version")).toEqual({ kind: "version" });
  });

  test("the version is package.json's when not compiled", () => {
    expect(VERSION).toBe(pkg.version);
  });

  test("a trtllm-serve command line carries over: disaggregated -c -t -r -l", () => {
    const { config, warnings } = serve("disaggregated", "-c", "disagg.yaml", "-t", "300", "-r", "0.5", "-l", "warning");
    expect(config).toMatchObject({ host: "0.0.0.0", serverStartTimeoutMs: 300_000, requestTimeoutMs: 500, logLevel: "warn" });
    expect(config.contextServers).toEqual(["http://localhost:8001"]);
    expect(warnings).toEqual([]);
  });

  test.each([[["-c", "disagg.yaml"]], [["--config", "disagg.yaml"]], [["--config_file", "disagg.yaml"]], [["--config_file=disagg.yaml"]]])(
    "every spelling of the config file option reads it: %p",
    (words) => {
      expect(serve("disaggregated", ...words).config.configFile).toBe("disagg.yaml");
    },
  );

  test("--config_file gets a debug note, not a warning", () => {
    const { warnings, notes } = serve("disaggregated", "--config_file", "disagg.yaml");
    expect(warnings).toEqual([]);
    expect(notes).toContainEqual({ level: "debug", text: "--config_file is trtllm-serve's older spelling of -c/--config" });
  });

  test("upstream's long options are accepted under their own names", () => {
    const { config } = serve(
      "disaggregated",
      "--config_file",
      "disagg.yaml",
      "--server_start_timeout",
      "600",
      "--request_timeout",
      "30",
      "--log_level",
      "verbose",
      "--schedule_style",
      "GENERATION_FIRST",
      "--report_addr",
      "/tmp/addr",
    );
    expect(config).toMatchObject({
      serverStartTimeoutMs: 600_000,
      requestTimeoutMs: 30_000,
      logLevel: "debug",
      schedule: "generation_first",
      reportAddrFile: "/tmp/addr",
    });
    expect(serve("disaggregated", "-c", "disagg.yaml", "-s", "Context_First").config.schedule).toBe("context_first");
  });

  test("--metrics-log-interval and --telemetry/--no-telemetry are accepted; a non-zero interval is said to be a no-op", () => {
    expect(serve(...WORKERS, "--metrics-log-interval", "0", "--no-telemetry").notes).toEqual([]);
    const { notes, config } = serve(...WORKERS, "--metrics-log-interval", "10", "--telemetry");
    expect(notes.map((note) => note.level)).toEqual(["info"]);
    expect(notes[0]?.text).toStartWith("--metrics-log-interval 10: no periodic statistics lines are logged here");
    expect(Object.keys(config)).not.toContain("telemetry");
  });

  test("-m reads a metadata server config under upstream's long name too", () => {
    const deps: LoadDeps = { ...DEPS, readFile: (path) => (path === "meta.yaml" ? "hostname: etcd\nport: 2379\n" : DEPS.readFile(path)) };
    const command = parseCommandLine(["disaggregated", "-c", "disagg.yaml", "--metadata_server_config_file", "meta.yaml"], deps);
    expect(command.kind === "serve" && command.config.discovery?.kind).toBe("metadata");
  });

  test("URL flags repeat, take comma lists and both spellings, and drop duplicates", () => {
    const { config } = serve(
      "serve",
      "--context",
      "a:1,http://b:2/",
      "--context",
      "A:1",
      "--generation",
      "https://g:9443",
      "--generation",
      "a:1",
    );
    expect(config.contextServers).toEqual(["http://a:1", "http://b:2"]);
    // One URL may serve both roles (a mixed worker).
    expect(config.generationServers).toEqual(["https://g:9443", "http://a:1"]);
  });

  test("flags override the config file", () => {
    const { config } = serve(
      "-c",
      "disagg.yaml",
      "--port",
      "0",
      "--context",
      "other:1",
      "--node-id",
      "255",
      "--schedule",
      "generation_first",
    );
    expect(config).toMatchObject({ port: 0, nodeId: 255, schedule: "generation_first", configFile: "disagg.yaml" });
    expect(config.contextServers).toEqual(["http://other:1"]);
    expect(config.generationServers).toEqual(["http://localhost:8003"]);
  });

  test("every serve flag reaches the config", () => {
    const { config } = serve(
      ...WORKERS,
      "--host",
      "::",
      "--context-router",
      "load_balancing",
      "--generation-router",
      "load_balancing",
      "--max-retries",
      "2",
      "--retry-delay-ms",
      "10",
      "--server-start-timeout",
      "2.5",
      "--stream-start-wait-ms",
      "5",
      "--keepalive-interval-ms",
      "0",
      "--log-level",
      "debug",
      "--max-body-bytes",
      "1024",
      "--request-timeout",
      "7",
    );
    expect(config).toMatchObject({
      host: "::",
      contextRouter: "load_balancing",
      generationRouter: "load_balancing",
      maxRetries: 2,
      retryDelayMs: 10,
      serverStartTimeoutMs: 2500,
      streamStartWaitMs: 5,
      keepaliveIntervalMs: 0,
      logLevel: "debug",
      maxBodyBytes: 1024,
      requestTimeoutMs: 7000,
      nodeId: 3,
    });
  });

  test("worker flags are kept for the emulator, absent flags absent; no registration without --register", () => {
    const command = parse(
      "worker",
      "--role",
      "mixed",
      "--port",
      "0",
      "--host",
      "127.0.0.1",
      "--model",
      "m",
      "--prefill-ms",
      "5",
      "--prefill-ms-per-token",
      "0.5",
      "--token-ms",
      "2",
      "--output-tokens",
      "8",
      "--reject-status",
      "503",
      "--reject-after-ms",
      "1",
      "--cut-after-tokens",
      "3",
      "--chunk-bytes",
      "7",
      "--silence-ms",
      "100",
      "--silence-after-tokens",
      "2",
      "--error-event-after-tokens",
      "4",
    );
    expect(command).toEqual({
      kind: "worker",
      role: "mixed",
      flags: {
        port: 0,
        host: "127.0.0.1",
        model: "m",
        prefillMs: 5,
        prefillMsPerToken: 0.5,
        tokenMs: 2,
        outputTokens: 8,
        rejectStatus: 503,
        rejectAfterMs: 1,
        cutAfterTokens: 3,
        chunkBytes: 7,
        silenceMs: 100,
        silenceAfterTokens: 2,
        errorEventAfterTokens: 4,
      },
      register: undefined,
    });
    expect(parse("worker", "--role", "context", "--port", "8001")).toEqual({
      kind: "worker",
      role: "context",
      flags: { port: 8001 },
      register: undefined,
    });
  });

  test("a KV cache block holds at least one token; a negative capacity is refused", () => {
    expect(() => parse("worker", "--role", "context", "--port", "0", "--tokens-per-block", "0")).toThrow(UsageError);
    expect(() => parse("worker", "--role", "context", "--port", "0", "--kv-cache-blocks", "-1")).toThrow(UsageError);
  });

  test("demo takes an optional port", () => {
    expect(parse("demo")).toEqual({ kind: "demo", port: 8080 });
    expect(parse("demo", "--port", "0")).toEqual({ kind: "demo", port: 0 });
  });
});

function coordinator(argv: readonly string[], env: Record<string, string> = {}): Extract<Command, { kind: "coordinator" }> {
  const command = parseCommandLine(["coordinator", ...argv], { ...DEPS, env });
  if (command.kind !== "coordinator") throw new Error(`expected coordinator, got ${command.kind}`);
  return command;
}

describe("coordinator", () => {
  test("it reads serve's config and listens on its port - 1, as upstream's implicit coordinator, unless --port says where", () => {
    const command = coordinator(["-c", "disagg.yaml", "--generation-router", "conversation", "--max-inflight-per-worker", "4"]);
    expect(command.port).toBe(7999);
    expect(command.config.generationServers).toEqual(["http://localhost:8003"]);
    expect(command.config.generationRouter).toBe("conversation");
    expect(command.config.maxInflightPerWorker).toBe(4);
    expect(coordinator(["-c", "disagg.yaml", "--port", "9100"]).port).toBe(9100);
    // The YAML the replicas share names the coordinator: it listens there.
    expect(coordinator(["-c", "disagg.yaml", "--disagg-coordinator-url", "http://coord:7100"]).port).toBe(7100);
    expect(coordinator(["-c", "disagg.yaml", "--disagg-coordinator-url", "http://coord:7100", "--port", "9100"]).port).toBe(9100);
    // Workers register with the HTTP cluster storage it serves: the cluster_uri is its address.
    const storage: LoadDeps = { ...DEPS, readFile: () => `${YAML}disagg_cluster: { cluster_uri: "http://coord:7200" }\n` };
    const registering = parseCommandLine(["coordinator", "-c", "cluster.yaml"], storage);
    expect(registering.kind === "coordinator" ? registering.port : 0).toBe(7200);
    // A Unix socket URL: served beside the port, which is then port - 1.
    const uds = coordinator(["-c", "disagg.yaml", "--disagg-coordinator-url", "unix:/run/coord.sock"]);
    expect([uds.port, uds.socketPath]).toEqual([7999, "/run/coord.sock"]);
    expect(coordinator(["-c", "disagg.yaml"]).socketPath).toBeUndefined();
  });

  test("a placement's lease is 180 s unless --reservation-timeout or TRTLLM_DISAGG_COORDINATOR_RESERVATION_TIMEOUT says otherwise", () => {
    expect(coordinator(WORKERS).reservationTimeoutMs).toBe(180_000);
    expect(coordinator(WORKERS, { TRTLLM_DISAGG_COORDINATOR_RESERVATION_TIMEOUT: "2.5" }).reservationTimeoutMs).toBe(2500);
    expect(
      coordinator([...WORKERS, "--reservation-timeout", "30"], { TRTLLM_DISAGG_COORDINATOR_RESERVATION_TIMEOUT: "2.5" })
        .reservationTimeoutMs,
    ).toBe(30_000);
    expect(() => coordinator(WORKERS, { TRTLLM_DISAGG_COORDINATOR_RESERVATION_TIMEOUT: "soon" })).toThrow(ConfigError);
  });

  test("the fleet's num_workers and stateful routers, as upstream's docs write them, start it without a warning", () => {
    const fleet = `${YAML}num_workers: 4\ncontext_servers: { num_instances: 1, urls: ["localhost:8001"], router: { type: kv_cache_aware } }\n`;
    const command = parseCommandLine(["coordinator", "-c", "fleet.yaml"], { ...DEPS, readFile: () => fleet });
    expect(command.kind === "coordinator" ? command.warnings : ["not a coordinator"]).toEqual([]);
  });

  test("its help page lists its own flag and serve's", () => {
    const command = parse("coordinator", "--help");
    expect(command.kind === "help" ? command.text : "").toContain("--reservation-timeout S");
    expect(command.kind === "help" ? command.text : "").toContain("--max-inflight-per-worker N");
  });
});

describe("mistakes", () => {
  test.each([
    [["--nope"], "Unknown option '--nope'"],
    [["frobnicate"], 'Unknown command "frobnicate" (expected serve, coordinator, worker or demo)'],
    [["--port", "1", "serve"], "Unexpected argument 'serve'"],
    [["--port", "abc"], 'Invalid value for --port: "abc" (expected an integer from 0 to 65535)'],
    [["--port", "65536"], 'Invalid value for --port: "65536" (expected an integer from 0 to 65535)'],
    [["--node-id", "256"], 'Invalid value for --node-id: "256" (expected an integer from 0 to 255)'],
    [["--max-retries=-1"], 'Invalid value for --max-retries: "-1" (expected an integer >= 0)'],
    [["--request-timeout", "0"], 'Invalid value for --request-timeout: "0" (expected a number of seconds > 0)'],
    [["--schedule", "random"], 'Invalid value for --schedule: "random" (expected one of context_first, generation_first (in any case))'],
    [["--context", "localhost"], 'Invalid value for --context: "localhost" (expected host:port or http(s)://host:port)'],
    [["--host", ""], 'Invalid value for --host: "" (expected a non-empty string)'],
    [["worker", "--port", "0"], "worker needs --role"],
    [["worker", "--role", "context"], "worker needs --port"],
    [["worker", "--role", "context", "--port", "0", "--context", "a:1"], "Unknown option '--context'"],
    [
      ["worker", "--role", "context", "--port", "0", "--reject-status", "200"],
      'Invalid value for --reject-status: "200" (expected an integer from 400 to 599)',
    ],
    [["demo", "--context", "a:1"], "Unknown option '--context'"],
  ])("%p is a UsageError", (argv, message) => {
    const error = usageErrorOf(...argv);
    expect(error.message).toStartWith(message);
    expect(error.usage).toContain("Usage:");
  });

  test("a UsageError carries the usage of the command the user tried", () => {
    expect(usageErrorOf("worker", "--port", "0").usage).toBe(usageText(VERSION, "worker"));
    expect(usageErrorOf("--port", "abc").usage).toBe(usageText(VERSION, "serve"));
  });

  test("settings errors stay ConfigErrors, naming the key", () => {
    expect(() => parse("-c", "bad.yaml")).toThrow(new ConfigError('Invalid config: port must be an integer from 0 to 65535, not "abc"'));
    expect(() => parse("--context", "c:1")).toThrow(ConfigError);
  });
});
