import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { memoryLogger } from "./logger.ts";
import { PerfJsonlWriter } from "./perf-jsonl.ts";

const STARTED = new Date(Date.UTC(2026, 0, 2, 3, 4, 5));

describe("perf metrics JSONL", () => {
  test("records are appended, one line each, to perf_metrics-disagg-<host>-<pid>-<UTC stamp>.jsonl", async () => {
    const dir = mkdtempSync(join(tmpdir(), "perf-jsonl-"));
    try {
      const writer = new PerfJsonlWriter({ dir: join(dir, "sub"), hostname: "h1", pid: 42, startedAt: STARTED, logger: memoryLogger() });
      writer.submit({ a: 1 });
      writer.submit({ b: 2 });
      await writer.flush();
      expect(readdirSync(join(dir, "sub"))).toEqual(["perf_metrics-disagg-h1-42-20260102T030405Z.jsonl"]);
      expect(readFileSync(writer.path, "utf8")).toBe('{"a":1}\n{"b":2}\n');
      expect(writer.written).toBe(2);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("while a write is slow, the queue holds 1024 records, leaves in batches of 64, and counts what it drops", async () => {
    const batches: number[] = [];
    const gate = Promise.withResolvers<void>();
    const firstWrite = Promise.withResolvers<void>();
    const writer = new PerfJsonlWriter({
      dir: tmpdir(),
      hostname: "h",
      pid: 1,
      startedAt: STARTED,
      logger: memoryLogger(),
      append: async (_path, data) => {
        batches.push(data.split("\n").length - 1);
        firstWrite.resolve();
        await gate.promise;
      },
    });
    writer.submit({ i: -1 });
    await firstWrite.promise;
    for (let i = 0; i < 1024 + 10; i++) writer.submit({ i });
    expect(writer.dropped).toBe(10);
    gate.resolve();
    await writer.flush();
    expect(batches[0]).toBe(1);
    expect(batches.slice(1).every((size) => size === 64)).toBe(true);
    expect(writer.written).toBe(1025);
  });

  test("a failed write drops its batch, counted and warned once, and later records still go out", async () => {
    const logger = memoryLogger();
    let fail = true;
    const writer = new PerfJsonlWriter({
      dir: tmpdir(),
      hostname: "h",
      pid: 1,
      startedAt: STARTED,
      logger,
      append: () => (fail ? Promise.reject(new Error("disk full")) : Promise.resolve()),
    });
    writer.submit({ x: 1 });
    await writer.flush();
    fail = false;
    writer.submit({ x: 2 });
    await writer.flush();
    expect([writer.dropped, writer.written]).toEqual([1, 1]);
    expect(logger.records.filter((r) => r["msg"] === "perf metrics write failed")).toHaveLength(1);
  });
});
