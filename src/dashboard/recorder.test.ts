import { describe, expect, test } from "bun:test";
import type { EndedRequest } from "../observability/traffic-observer.ts";
import { DashboardRecorder, FAILURES_KEPT, SERIES_POINTS, type DashboardSource } from "./recorder.ts";
import type { WorkerView } from "./snapshot.ts";

function setup(
  workers: WorkerView[] = [{ role: "context", url: "http://c", id: undefined, ready: true, inFlight: 0, version: undefined }],
) {
  const clock = { now: 1_000_000 };
  const listed = { workers, protectedByKeys: false };
  const source: DashboardSource = {
    version: "1.2.3",
    pid: 1,
    inFlight: () => 4,
    draining: () => false,
    admission: () => ({ inFlight: 4, waiting: 1, limit: 8 }),
    workers: () => listed.workers,
    discovery: () => ({ source: "static" }),
    protectedByKeys: () => listed.protectedByKeys,
  };
  return { clock, listed, recorder: new DashboardRecorder(source, () => clock.now) };
}

function ended(outcome: EndedRequest["outcome"], overrides: Partial<EndedRequest> = {}): EndedRequest {
  return {
    route: "/v1/chat/completions",
    outcome,
    status: outcome === "ok" ? 200 : 502,
    disaggRequestId: 7n,
    worker: "http://c",
    message: outcome === "ok" ? undefined : "boom",
    code: outcome === "ok" ? undefined : "WORKER_HTTP_ERROR",
    ttftMs: 20,
    durationMs: 50,
    ...overrides,
  };
}

describe("DashboardRecorder", () => {
  test("route totals count every ended request by outcome, and the rate covers the last 10 s", () => {
    const { clock, recorder } = setup();
    for (let i = 0; i < 20; i++) recorder.requestEnded(ended("ok"));
    recorder.requestEnded(ended("worker_error"));
    clock.now += 1000;
    const rows = recorder.snapshot().proxy.requests;
    expect(rows).toEqual([
      { route: "/v1/chat/completions", outcome: "ok", total: 20, perSecond: 2 },
      { route: "/v1/chat/completions", outcome: "worker_error", total: 1, perSecond: 0.1 },
    ]);
  });

  test("a worker's error share and latencies come from its own legs over the last minute", () => {
    const { clock, recorder } = setup();
    for (let i = 0; i < 9; i++) {
      recorder.legAttempt("context", "http://c");
      recorder.legCompleted("context", "http://c", 0.1, 0.4);
    }
    recorder.legAttempt("context", "http://c");
    recorder.legFailed("context", "http://c");
    clock.now += 1000;
    const [row] = recorder.snapshot().workers;
    expect(row!.perSecond).toBe(1);
    expect(row!.errorShare).toBeCloseTo(0.1);
    expect(Math.abs(row!.ttftP50Ms! - 100) / 100).toBeLessThan(0.1);
    expect(Math.abs(row!.durationP99Ms! - 400) / 400).toBeLessThan(0.1);
    clock.now += 61_000;
    const [later] = recorder.snapshot().workers;
    expect(later!.errorShare).toBeUndefined();
    expect(later!.ttftP50Ms).toBeUndefined();
  });

  test("a worker leaving rotation is unhealthy since the check that ejected it", () => {
    const { clock, listed, recorder } = setup();
    recorder.healthChecked("http://c", true, true);
    expect(recorder.snapshot().workers[0]!.state).toBe("healthy");
    clock.now += 1000;
    recorder.healthChecked("http://c", false, true);
    expect(recorder.snapshot().workers[0]!.state).toBe("failing");
    clock.now += 1000;
    const ejectedAt = clock.now;
    recorder.healthChecked("http://c", false, false);
    listed.workers = [{ ...listed.workers[0]!, ready: false }];
    clock.now += 1000;
    recorder.healthChecked("http://c", false, false);
    const row = recorder.snapshot().workers[0]!;
    expect(row.state).toBe("unhealthy");
    expect(row.ejectedAt).toBe(ejectedAt);
    expect(row.lastCheckAt).toBe(clock.now);
  });

  test("each tick adds one chart point of that second's outcomes, in-flight and first-token percentiles", () => {
    const { clock, recorder } = setup();
    recorder.requestEnded(ended("ok", { ttftMs: 10 }));
    recorder.requestEnded(ended("timeout", { ttftMs: undefined }));
    recorder.tick();
    clock.now += 1000;
    recorder.tick();
    const series = recorder.snapshot().series;
    expect(series.outcomes.ok).toEqual([1, 0]);
    expect(series.outcomes.timeout).toEqual([1, 0]);
    expect(series.inFlight).toEqual([4, 4]);
    expect(series.ttftP50Ms[1]).toBeNull();
    expect(Math.abs(series.ttftP50Ms[0]! - 10) / 10).toBeLessThan(0.1);
    expect(recorder.snapshot(series.at[0]).series.at).toEqual([clock.now]);
  });

  test("failures keep the last 50, newest first, with id, worker, status and the proxy's words for their code", () => {
    const { recorder } = setup();
    for (let i = 0; i < 120; i++) recorder.requestEnded(ended("worker_error", { disaggRequestId: BigInt(i) }));
    const failures = recorder.snapshot().failures;
    expect(failures.length).toBe(FAILURES_KEPT);
    expect(failures[0]).toMatchObject({
      disaggRequestId: "119",
      worker: "http://c",
      outcome: "worker_error",
      status: 502,
      message: "WORKER_HTTP_ERROR: the worker answered with an error",
    });
    expect(failures.at(-1)!.disaggRequestId).toBe("70");
  });

  test("what a client was told (its body's values, a worker's text) is shown only while the page is behind client keys", () => {
    const { listed, recorder } = setup();
    recorder.requestEnded(
      ended("rejected", { status: 400, code: "BAD_REQUEST", message: "temperature: 'secret-value-from-body' is not a number" }),
    );
    recorder.requestEnded(ended("worker_error", { message: `worker says: ${"w".repeat(400)}` }));
    const open = JSON.stringify(recorder.snapshot());
    expect(open).not.toContain("secret-value-from-body");
    expect(open).not.toContain("worker says");
    expect(recorder.snapshot().failures.map((row) => row.message)).toEqual([
      "WORKER_HTTP_ERROR: the worker answered with an error",
      "BAD_REQUEST: the request was refused as invalid",
    ]);
    listed.protectedByKeys = true;
    const [worker, body] = recorder.snapshot().failures;
    expect(body!.message).toContain("secret-value-from-body");
    expect(worker!.message).toBe(`worker says: ${"w".repeat(287)}…`);
  });

  test("memory stays bounded: hours of ticks keep 15 minutes, and departed workers are forgotten", () => {
    const { clock, listed, recorder } = setup();
    for (let s = 0; s < 2 * 3600; s++) {
      recorder.legAttempt("context", `http://gone-${s}`);
      recorder.requestEnded(ended(s % 2 === 0 ? "ok" : "rejected"));
      clock.now += 1000;
      recorder.tick();
    }
    const snapshot = recorder.snapshot();
    expect(snapshot.series.at.length).toBe(SERIES_POINTS);
    expect(snapshot.failures.length).toBe(FAILURES_KEPT);
    listed.workers = [];
    recorder.tick();
    expect(recorder.snapshot().workers).toEqual([]);
  });

  test("ticks reach listeners until they unsubscribe or the recorder stops", () => {
    const { recorder } = setup();
    let heard = 0;
    const off = recorder.onTick(() => heard++);
    recorder.tick();
    off();
    recorder.tick();
    expect(heard).toBe(1);
  });
});
