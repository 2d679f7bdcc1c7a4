import { afterEach, describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { ErrorCode } from "../errors.ts";
import { memoryLogger } from "./logger.ts";
import { openRequestTrace, RequestTraceWriter, traceStatusOf, type TraceClock, type TraceEnd } from "./request-trace.ts";
import { sessionKey } from "./trace-records.ts";

const dirs: string[] = [];
afterEach(() => {
  for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
});

function scratch(): string {
  const dir = mkdtempSync(join(tmpdir(), "trace-"));
  dirs.push(dir);
  return dir;
}

/** A clock moved by hand. */
function handClock(iso: string): TraceClock & { set(iso: string): void } {
  let wall = Date.parse(iso);
  return { wallMs: () => wall, steadySeconds: () => 12.5, set: (next) => (wall = Date.parse(next)) };
}

const encoder = new TextEncoder();

function input(body = '{"model":"m","messages":[{"role":"user","content":"hi"}]}') {
  return {
    route: "/v1/chat/completions",
    headers: new Headers({ "content-type": "application/json" }),
    body: encoder.encode(body),
    conversationId: undefined,
  };
}

function end(httpStatus: number, errorCode?: ErrorCode): TraceEnd {
  return {
    httpStatus,
    errorCode,
    outcome: errorCode === undefined ? "ok" : "worker_error",
    message: errorCode,
    disaggRequestId: 9_007_199_254_740_993n,
  };
}

function lines(path: string): Record<string, unknown>[] {
  return readFileSync(path, "utf8")
    .trimEnd()
    .split("\n")
    .map((line) => JSON.parse(line) as Record<string, unknown>);
}

describe("RequestTraceWriter", () => {
  test("files go to one directory per UTC hour, named requests-<pid> and responses-<pid>, by each line's own time", async () => {
    const dir = scratch();
    const clock = handClock("2026-09-03T14:59:59.900Z");
    const writer = new RequestTraceWriter({ dir, logger: memoryLogger(), pid: 4242, clock });
    const handle = writer.accepted(input());
    clock.set("2026-09-03T15:00:00.100Z");
    writer.finished(handle, end(200));
    await writer.flush();
    expect(readdirSync(dir).toSorted()).toEqual(["2026-09-03T14", "2026-09-03T15"]);
    expect(readdirSync(join(dir, "2026-09-03T14"))).toEqual(["requests-4242.jsonl"]);
    expect(readdirSync(join(dir, "2026-09-03T15"))).toEqual(["responses-4242.jsonl"]);
    const [request] = lines(join(dir, "2026-09-03T14", "requests-4242.jsonl"));
    expect(request).toMatchObject({
      event: "request",
      recorded_at: "2026-09-03T14:59:59.900000+00:00",
      server_arrival_time: 12.5,
      status: "accepted",
      session: "_no_session",
    });
    const [response] = lines(join(dir, "2026-09-03T15", "responses-4242.jsonl"));
    expect(response).toMatchObject({
      event: "response",
      trace_id: request!["trace_id"],
      finished_at: "2026-09-03T15:00:00.100000+00:00",
      status: "completed",
    });
    // 2^53 + 1: written as the integer it is, not rounded through a double.
    expect(readFileSync(join(dir, "2026-09-03T15", "responses-4242.jsonl"), "utf8")).toContain('"disagg_request_id":9007199254740993,');
  });

  test("a second terminal line for one request is never written", async () => {
    const dir = scratch();
    const writer = new RequestTraceWriter({ dir, logger: memoryLogger(), pid: 1, clock: handClock("2026-09-03T14:00:00Z") });
    const handle = writer.accepted(input());
    writer.finished(handle, end(200));
    writer.finished(handle, end(499, "CLIENT_GONE"));
    await writer.flush();
    expect(lines(join(dir, "2026-09-03T14", "responses-1.jsonl")).map((line) => line["status"])).toEqual(["completed"]);
    expect(writer.counts()).toEqual({ submitted: 2, persisted: 2, dropped: { queue_full: 0, write_error: 0, shutdown: 0 }, pending: 0 });
  });

  test("a full queue drops lines and counts them, and the request's caller never waits", async () => {
    const { promise: release, resolve } = Promise.withResolvers<void>();
    const writing = Promise.withResolvers<void>();
    const appended: string[] = [];
    const logger = memoryLogger();
    const writer = new RequestTraceWriter({
      dir: "/nowhere",
      logger,
      queueLimit: 4,
      append: async (_path, data) => {
        writing.resolve();
        await release;
        appended.push(data);
      },
    });
    // The first line leaves the queue for the (held) append; four more fill it; the rest drop.
    writer.accepted(input());
    await writing.promise;
    for (let i = 0; i < 10; i++) writer.accepted(input());
    expect(writer.counts().dropped.queue_full).toBe(6);
    expect(logger.records.filter((record) => record["msg"] === "request trace queue full: lines dropped")).toHaveLength(1);
    resolve();
    await writer.flush();
    expect(writer.counts()).toMatchObject({ submitted: 11, persisted: 5, pending: 0 });
    expect(appended.join("").trimEnd().split("\n")).toHaveLength(5);
  });

  test("lines past the queue's byte bound are dropped and counted, whatever their number", async () => {
    const { promise: release, resolve } = Promise.withResolvers<void>();
    const writing = Promise.withResolvers<void>();
    const writer = new RequestTraceWriter({
      dir: "/nowhere",
      logger: memoryLogger(),
      maxQueuedBytes: 64 * 1024,
      append: async () => {
        writing.resolve();
        await release;
      },
    });
    writer.accepted(input());
    await writing.promise;
    // 20 KiB bodies: three fit beside the overhead of each line; the rest are dropped.
    for (let i = 0; i < 10; i++) writer.accepted(input(JSON.stringify({ pad: "x".repeat(20 * 1024) })));
    expect(writer.counts().dropped.queue_full).toBe(7);
    resolve();
    await writer.flush();
    expect(writer.counts()).toMatchObject({ submitted: 11, persisted: 4, pending: 0 });
  });

  test("a failed write counts its lines as write_error and the writer goes on", async () => {
    let fail = true;
    const writer = new RequestTraceWriter({
      dir: "/nowhere",
      logger: memoryLogger(),
      append: async () => {
        if (fail) throw new Error("disk full");
      },
    });
    writer.accepted(input());
    await writer.flush();
    fail = false;
    writer.accepted(input());
    await writer.flush();
    expect(writer.counts()).toMatchObject({ submitted: 2, persisted: 1, dropped: { write_error: 1 } });
  });

  test("after close, lines are dropped and counted as shutdown", async () => {
    const writer = new RequestTraceWriter({ dir: scratch(), logger: memoryLogger() });
    const handle = writer.accepted(input());
    await writer.close();
    writer.finished(handle, end(200));
    expect(writer.counts()).toMatchObject({ submitted: 2, persisted: 1, dropped: { shutdown: 1 }, pending: 0 });
  });
});

describe("openRequestTrace", () => {
  test("a directory that cannot be made turns the trace off with an error line, and nothing else fails", () => {
    const dir = scratch();
    const blocker = join(dir, "traces");
    writeFileSync(blocker, "not a directory");
    const logger = memoryLogger();
    expect(openRequestTrace(blocker, logger)).toBeUndefined();
    expect(logger.records).toEqual([
      expect.objectContaining({ level: "error", msg: expect.stringContaining("Disabling request trace output") }),
    ]);
    expect(openRequestTrace(join(dir, "made", "here"), logger)).toBeInstanceOf(RequestTraceWriter);
    expect(readdirSync(join(dir, "made"))).toEqual(["here"]);
  });
});

describe("trace lines", () => {
  test("a session id is reduced to a bounded safe key, or _no_session", () => {
    expect(sessionKey("abc/../def ghi")).toBe("abc_.._def_ghi");
    expect(sessionKey(".hidden")).toBe("_no_session");
    expect(sessionKey(undefined)).toBe("_no_session");
    expect(sessionKey("x".repeat(300))).toHaveLength(128);
  });

  test("the terminal statuses are upstream's vocabulary", () => {
    const cases: [number, ErrorCode | undefined, string][] = [
      [200, undefined, "completed"],
      [200, "CONTEXT_OVERFLOW", "completed"],
      [400, "CONTEXT_OVERFLOW", "rejected_400"],
      [400, "WORKER_HTTP_ERROR", "rejected_400"],
      [429, "OVERLOADED", "rejected_429"],
      [503, "WORKER_HTTP_ERROR", "error"],
      [200, "WORKER_STREAM_BROKEN", "error"],
      [500, "INTERNAL", "error"],
      [499, "CLIENT_GONE", "client_disconnected"],
      [200, "CLIENT_GONE", "client_disconnected"],
      [503, "DRAINING", "cancelled"],
      [500, "CONVERSION_ERROR", "conversion_error"],
    ];
    for (const [httpStatus, errorCode, status] of cases) expect(traceStatusOf({ httpStatus, errorCode })).toBe(status);
  });
});
