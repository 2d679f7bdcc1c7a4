import { describe, expect, test } from "bun:test";
import pkg from "../package.json" with { type: "json" };
import { flagTable } from "../scripts/flag-table.ts";
import { ConfigError, OPTIONS, parseCommandLine, usageText, VERSION } from "./cli.ts";
import type { LoadDeps } from "./config/load.ts";
import { DEPS, parse, serve, usageErrorOf, WORKERS } from "./cli-test-support.ts";

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
