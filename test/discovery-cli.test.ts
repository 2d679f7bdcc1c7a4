import { describe, expect, test } from "bun:test";
import { parseCommandLine, UsageError } from "../src/cli.ts";

function workerRegistration(...argv: string[]): unknown {
  const command = parseCommandLine(["worker", "--role", "context", "--port", "0", ...argv]);
  return command.kind === "worker" ? command.register : command;
}

function usageError(...argv: string[]): string {
  try {
    workerRegistration(...argv);
  } catch (error) {
    if (error instanceof UsageError) return error.message;
    throw error;
  }
  return "no error";
}

describe("worker registration flags", () => {
  test("--register etcd://host:port registers with disagg_cluster's defaults", () => {
    expect(workerRegistration("--register", "etcd://Etcd:2379")).toEqual({ endpoint: "http://etcd:2379", clusterName: "", heartbeatMs: 5000, ttlMs: 10_000 });
    expect(workerRegistration()).toBeUndefined();
  });

  test("cluster name, heartbeat and timeout flags reach the registration, in ms", () => {
    const options = workerRegistration("--register", "etcd://a:1,etcd://b:2", "--cluster-name", "prod", "--heartbeat-interval", "0.5", "--inactive-timeout", "3");
    expect(options).toEqual({ endpoint: "http://a:1,http://b:2", clusterName: "prod", heartbeatMs: 500, ttlMs: 3000 });
  });

  test("an http cluster URI, or registration settings without --register, are usage errors", () => {
    expect(usageError("--register", "http://proxy:8000")).toBe('Invalid value for --register: "http://proxy:8000" (expected etcd://host:port)');
    expect(usageError("--cluster-name", "prod")).toBe("--cluster-name needs --register");
    expect(usageError("--inactive-timeout", "3")).toBe("--inactive-timeout needs --register");
  });
});
