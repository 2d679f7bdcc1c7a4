import { describe, expect, test } from "bun:test";
import { ConfigError, parseCommandLine, UsageError, type Command } from "./cli.ts";
import type { LoadDeps } from "./config/load.ts";
import { DEPS, parse, WORKERS, YAML } from "./cli-test-support.ts";

describe("worker and demo", () => {
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
