import { describe, expect, test } from "bun:test";
import { memoryLogger } from "../observability/logger.ts";
import { ProxyError } from "../errors.ts";
import { OutlierDetector, outlierFailureOf } from "./outlier-detector.ts";
import { WorkerPool } from "./worker-pool.ts";

const A = "http://a:1";
const B = "http://b:1";
const C = "http://c:1";

function setup(generation: string[], settings = { outlierFailures: 3, outlierEjectionMs: 1000, outlierMaxEjectionPercent: 50 }) {
  const pool = new WorkerPool([A], generation);
  for (const entry of [...pool.all("context"), ...pool.all("generation")]) entry.ready = true;
  const clock = { now: 0 };
  const logger = memoryLogger();
  const detector = new OutlierDetector(pool, settings, logger, () => clock.now);
  const fail = (origin: string, times: number): void => {
    for (let i = 0; i < times; i++) detector.observed("generation", origin, "timeout");
  };
  const serving = (): string[] => pool.ready("generation").map((worker) => worker.origin);
  return { pool, clock, logger, detector, fail, serving };
}

describe("OutlierDetector", () => {
  test("consecutive failures eject a worker; a success in between starts the count again", () => {
    const { detector, fail, serving } = setup([B, C]);
    fail(B, 2);
    detector.observed("generation", B, undefined);
    fail(B, 2);
    expect(serving()).toEqual([B, C]);
    fail(B, 1);
    expect(serving()).toEqual([C]);
  });

  test("an ejected worker returns only once its time is over and a check or request succeeds; each ejection lasts longer", () => {
    const { detector, fail, serving, clock, logger } = setup([B, C]);
    fail(B, 3);
    clock.now = 999;
    detector.checked(B, true);
    expect(serving()).toEqual([C]);
    clock.now = 1000;
    detector.checked(B, false);
    expect(serving()).toEqual([C]);
    detector.checked(B, true);
    expect(serving()).toEqual([B, C]);
    // The second ejection lasts twice the first.
    fail(B, 3);
    clock.now = 2999;
    detector.observed("generation", B, undefined);
    expect(serving()).toEqual([C]);
    clock.now = 3000;
    detector.observed("generation", B, undefined);
    expect(serving()).toEqual([B, C]);
    const ejections = logger.records.filter((line) => line["msg"] === "worker ejected: its requests keep failing");
    expect(ejections.map((line) => line["ejection_s"])).toEqual([1, 2]);
  });

  test("each ejection length a worker then stays in rotation forgives one ejection", () => {
    const { detector, fail, clock, logger } = setup([B, C]);
    fail(B, 3);
    clock.now = 1000;
    detector.checked(B, true);
    fail(B, 3);
    clock.now = 3000;
    detector.checked(B, true);
    // Back at 3,000 after two ejections: by 7,000 four base lengths passed, both are forgiven and the third lasts as the first.
    clock.now = 7000;
    fail(B, 3);
    const lengths = logger.records
      .filter((line) => line["msg"] === "worker ejected: its requests keep failing")
      .map((line) => line["ejection_s"]);
    expect(lengths).toEqual([1, 2, 1]);
  });

  test("never more than the share of a role, at least one, and never the last worker in rotation", () => {
    const three = setup([A, B, C], { outlierFailures: 1, outlierEjectionMs: 1000, outlierMaxEjectionPercent: 50 });
    three.fail(A, 1);
    three.fail(B, 1);
    // 50 % of 3 is 1: the second is kept.
    expect(three.serving()).toEqual([B, C]);
    const one = setup([B], { outlierFailures: 1, outlierEjectionMs: 1000, outlierMaxEjectionPercent: 100 });
    one.fail(B, 5);
    expect(one.serving()).toEqual([B]);
  });

  test("an ejected worker whose check passes returns before its time once no other worker of its role is in rotation", () => {
    const { pool, detector, fail, serving } = setup([B, C]);
    fail(B, 3);
    expect(serving()).toEqual([C]);
    detector.checked(B, true);
    expect(serving()).toEqual([C]);
    const c = pool.all("generation").find((worker) => worker.origin === C);
    if (c !== undefined) c.ready = false;
    detector.checked(B, true);
    expect(serving()).toEqual([B]);
  });

  test("with outlierFailures 0 nothing is ever ejected", () => {
    const { fail, serving } = setup([B, C], { outlierFailures: 0, outlierEjectionMs: 1000, outlierMaxEjectionPercent: 100 });
    fail(B, 50);
    expect(serving()).toEqual([B, C]);
  });
});

function http(status: number, starting = false): ProxyError {
  return new ProxyError("WORKER_HTTP_ERROR", status, "x", { starting });
}

describe("what a failed attempt says of its worker", () => {
  test("timeouts, lost or refused connections, 5xx and broken answers count; overload, start-up, 4xx, a reused connection lost unread and a client gone do not", () => {
    expect(outlierFailureOf(new ProxyError("WORKER_TIMEOUT", 504, "x"))).toBe("timeout");
    expect(outlierFailureOf(new ProxyError("WORKER_UNREACHABLE", 502, "x"))).toBe("connection lost");
    expect(outlierFailureOf(new ProxyError("WORKER_UNREACHABLE", 502, "x", { neverSent: true }))).toBe("connection refused");
    expect(outlierFailureOf(new ProxyError("WORKER_UNREACHABLE", 502, "x", { unread: true }))).toBeUndefined();
    expect(outlierFailureOf(http(500))).toBe("http 500");
    for (const status of [400, 429, 503, 529]) expect(outlierFailureOf(http(status))).toBeUndefined();
    expect(outlierFailureOf(http(503, true))).toBeUndefined();
    expect(outlierFailureOf(new ProxyError("WORKER_STREAM_BROKEN", 502, "x"))).toBe("stream broken");
    expect(outlierFailureOf(new ProxyError("CLIENT_GONE", 499, "x"))).toBeUndefined();
  });
});
