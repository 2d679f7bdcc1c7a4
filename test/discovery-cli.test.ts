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
    expect(workerRegistration("--register", "etcd://Etcd:2379")).toEqual({
      storage: "etcd",
      endpoint: "http://etcd:2379",
      key: undefined,
      clusterName: "",
      heartbeatMs: 5000,
      ttlMs: 10_000,
    });
    expect(workerRegistration()).toBeUndefined();
  });

  test("cluster name, heartbeat and timeout flags reach the registration, in ms", () => {
    const options = workerRegistration(
      "--register",
      "etcd://a:1,etcd://b:2",
      "--cluster-name",
      "prod",
      "--heartbeat-interval",
      "0.5",
      "--inactive-timeout",
      "3",
    );
    expect(options).toEqual({
      storage: "etcd",
      endpoint: "http://a:1,http://b:2",
      key: undefined,
      clusterName: "prod",
      heartbeatMs: 500,
      ttlMs: 3000,
    });
  });

  test("an http cluster URI registers in a proxy's cluster storage, under trtllm-serve's spelling too", () => {
    for (const flag of ["--register", "--disagg-cluster-uri", "--disagg_cluster_uri"]) {
      expect(workerRegistration(flag, "http://proxy:8000", "--cluster-name", "c")).toEqual({
        storage: "http",
        endpoint: "http://proxy:8000",
        key: undefined,
        clusterName: "c",
        heartbeatMs: 5000,
        ttlMs: 10_000,
      });
    }
  });

  test("a malformed URI, a key file for etcd, or registration settings without --register, are usage errors", () => {
    expect(usageError("--register", "proxy:8000")).toBe(
      'Invalid value for --register: "proxy:8000" (expected etcd://host:port or http://host:port)',
    );
    expect(usageError("--register", "etcd://e:1", "--cluster-key-file", "k")).toBe("--cluster-key-file needs --register http(s)://…");
    expect(usageError("--cluster-name", "prod")).toBe("--cluster-name needs --register");
    expect(usageError("--inactive-timeout", "3")).toBe("--inactive-timeout needs --register");
  });
});
