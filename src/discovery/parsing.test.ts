import { describe, expect, test } from "bun:test";
import { memoryLogger } from "../observability/logger.ts";
import { parseWorker } from "./cluster-discovery.ts";
import { workerIdOf } from "./register-worker.ts";

describe("disagg_cluster worker values", () => {
  test("role 0 is context and 1 generation, with a canonical origin", () => {
    const logger = memoryLogger();
    expect(parseWorker("k", JSON.stringify({ worker_id: "x", host: "GPU1", port: 8001, role: 0 }), logger)).toEqual({
      role: "context",
      origin: "http://gpu1:8001",
      registered: { worker_id: "x", host: "GPU1", port: 8001, role: 0 },
    });
    expect(parseWorker("/p/workers/w2", JSON.stringify({ host: "::1", port: 8002, role: 1 }), logger)).toEqual({
      role: "generation",
      origin: "http://[::1]:8002",
      registered: { worker_id: "w2", host: "::1", port: 8002, role: 1 },
    });
  });

  test("a wildcard host is replaced by the address the registration came from, when known", () => {
    const logger = memoryLogger();
    const value = JSON.stringify({ worker_id: "w", host: "0.0.0.0", port: 8001, role: 1 });
    expect(parseWorker("k", value, logger, "::ffff:10.1.2.3")?.origin).toBe("http://10.1.2.3:8001");
    expect(parseWorker("k", JSON.stringify({ worker_id: "w", host: "::", port: 8001, role: 1 }), logger, "fd00::7")?.origin).toBe(
      "http://[fd00::7]:8001",
    );
    expect(parseWorker("k", value, logger)?.origin).toBe("http://0.0.0.0:8001");
  });

  test("other roles, bad JSON and missing addresses name no worker", () => {
    const logger = memoryLogger();
    expect(parseWorker("k", JSON.stringify({ host: "h", port: 1, role: 2 }), logger)).toBeUndefined();
    expect(parseWorker("k", "not json", logger)).toBeUndefined();
    expect(parseWorker("k", JSON.stringify({ host: "h", role: 0 }), logger)).toBeUndefined();
    expect(logger.records.map((r) => r["level"])).toEqual(["debug", "warn", "warn"]);
  });

  test("worker ids follow upstream's <ROLE>-<host>:<port>-<epoch_ms>-<pid>-<3 digits>", () => {
    expect(workerIdOf("context", "10.0.0.1", 8001, 1_700_000_000_123, 42, 0.007)).toBe("CONTEXT-10.0.0.1:8001-1700000000123-42-007");
    expect(workerIdOf("generation", "h", 1)).toMatch(/^GENERATION-h:1-\d{13}-\d+-\d{3}$/);
  });
});
