import { describe, expect, test } from "bun:test";
import fixture from "../../test/fixtures/perf-metrics/server-phase.json" with { type: "json" };
import {
  CTX_CHUNK_METRICS,
  limitMetricsHeaders,
  MetricsHeaderBuilder,
  metricsEvent,
  SERVER_TIMING,
  START_END_TIME,
  STEP_METRICS,
} from "./perf-format.ts";
import { workerMetricsFromEvent, workerMetricsFromHeaders } from "./perf-worker-metrics.ts";

/** The record of TensorRT-LLM's own perf_metrics tests: durations 10/20/50 ms, one step, one chunk. */
const TIMING = { arrival_time: 1.0, first_scheduled_time: 1.01, first_token_time: 1.02, last_token_time: 1.05 };
const STEP = {
  iter: 3,
  forward_start_time: 2.0,
  forward_end_time: 2.002,
  sample_start_time: 2.002,
  sample_end_time: 2.003,
  gpu_forward_time: 1.5,
  gpu_sample_time: 0.5,
};
const CHUNK = {
  forward_start_time: 1.0,
  forward_end_time: 1.004,
  sample_start_time: 1.004,
  sample_end_time: 1.005,
  gpu_forward_time: 3.0,
  gpu_sample_time: 0.25,
};

describe("metrics headers", () => {
  test("a worker phase is written as the fixture says, and read back from it", () => {
    const { step_metrics, ctx_chunk_metrics } = fixture;
    expect(new MetricsHeaderBuilder().addPhase("server", fixture.timing, { step_metrics, ctx_chunk_metrics }).headers()).toEqual(
      fixture.headers,
    );
    const read = workerMetricsFromHeaders(new Headers(fixture.headers), "ctx");
    expect(read?.headers[SERVER_TIMING]).toBe(
      "ctx_queue;dur=10.000000, ctx_ttft;dur=20.000000, ctx_e2e;dur=50.000000, ctx_kv_transfer;dur=3.000000",
    );
    expect(read?.timing).toMatchObject({ arrival_time: 1, last_token_time: 1.05 });
    const event = fixture.event.slice(fixture.event.indexOf("data: ") + 6).trim();
    expect(workerMetricsFromEvent(event, "gen")?.headers[START_END_TIME]).toBe("gen-start;ts=1.000000000, gen-end;ts=1.050000000");
  });

  test("a phase becomes metric lists with 6-decimal durations in ms and 9-decimal timestamps in s", () => {
    const headers = new MetricsHeaderBuilder().addPhase("server", TIMING, { step_metrics: [STEP], ctx_chunk_metrics: [CHUNK] }).headers();
    expect(headers[SERVER_TIMING]).toBe("server_queue;dur=10.000000, server_ttft;dur=20.000000, server_e2e;dur=50.000000");
    expect(headers[START_END_TIME]).toBe("server-start;ts=1.000000000, server-end;ts=1.050000000");
    expect(headers[STEP_METRICS]).toContain("server-step-3-forward;dur=2.000000");
    expect(headers[STEP_METRICS]).toContain("server-step-3-gpu-sample;dur=0.500000");
    expect(headers[CTX_CHUNK_METRICS]).toContain("server-ctx-chunk-0-forward;dur=4.000000");
  });

  test("the disagg phase reports queue (to the context dispatch) and ttft; missing or negative spans are left out", () => {
    const headers = new MetricsHeaderBuilder()
      .addPhase("disagg", {
        arrival_time: 5,
        last_token_time: 6,
        server_arrival_time: 5,
        ctx_dispatch_time: 5.001,
        server_first_token_time: undefined,
      })
      .addPhase("x", { arrival_time: 2, first_token_time: 1 })
      .headers();
    expect(headers[SERVER_TIMING]).toBe("disagg_queue;dur=1.000000");
    expect(headers[START_END_TIME]).toBe("disagg-start;ts=5.000000000, disagg-end;ts=6.000000000, x-start;ts=2.000000000");
  });

  test("over 80 KiB only Server-Timing and X-TRTLLM-Start-End-Time are kept", () => {
    const steps = Array.from({ length: 2000 }, (_, iter) => ({ ...STEP, iter }));
    const headers = new MetricsHeaderBuilder().addPhase("server", TIMING, { step_metrics: steps, ctx_chunk_metrics: [CHUNK] }).headers();
    const { headers: kept, trimmed } = limitMetricsHeaders(headers);
    expect(trimmed).toBe(true);
    expect(Object.keys(kept)).toEqual([SERVER_TIMING, START_END_TIME]);
    expect(limitMetricsHeaders({ [SERVER_TIMING]: "a;dur=1" }).trimmed).toBe(false);
  });

  test("the stream event is `event: trtllm.perf_metrics` with the lists as compact JSON", () => {
    const event = new TextDecoder().decode(metricsEvent({ [SERVER_TIMING]: "a;dur=1.000000" }));
    expect(event).toBe('event: trtllm.perf_metrics\ndata: {"Server-Timing":"a;dur=1.000000"}\n\n');
    expect(metricsEvent({})).toBeUndefined();
  });
});

describe("what a worker reported", () => {
  const worker = new MetricsHeaderBuilder().addPhase("server", TIMING, { step_metrics: [STEP] }).headers();

  test("its server_/server- names become the phase's, and its timestamps are derived back", () => {
    const metrics = workerMetricsFromHeaders(new Headers(worker), "ctx");
    expect(metrics?.headers[SERVER_TIMING]).toBe("ctx_queue;dur=10.000000, ctx_ttft;dur=20.000000, ctx_e2e;dur=50.000000");
    expect(metrics?.headers[STEP_METRICS]).toStartWith("ctx-step-3-forward;");
    expect(metrics?.timing).toEqual({ arrival_time: 1, last_token_time: 1.05, first_scheduled_time: 1.01, first_token_time: 1.02 });
  });

  test("the trailing event's data reads the same as headers; anything else reads as nothing", () => {
    expect(workerMetricsFromEvent(JSON.stringify(worker), "gen")?.headers[START_END_TIME]).toBe(
      "gen-start;ts=1.000000000, gen-end;ts=1.050000000",
    );
    expect(workerMetricsFromEvent("not json", "gen")).toBeUndefined();
    expect(workerMetricsFromHeaders(new Headers(), "gen")).toBeUndefined();
  });
});
