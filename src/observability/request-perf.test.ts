import { describe, expect, test } from "bun:test";
import { MetricsHeaderBuilder, SERVER_TIMING, START_END_TIME, STEP_METRICS } from "./perf-format.ts";
import { requestPerf } from "./request-perf.ts";

function clock(...times: number[]): () => number {
  let i = 0;
  return () => times[Math.min(i++, times.length - 1)] ?? 0;
}

function workerHeaders(start: number): Headers {
  return new Headers(workerLists(start));
}

function workerLists(start: number): ReturnType<MetricsHeaderBuilder["headers"]> {
  return new MetricsHeaderBuilder()
    .addPhase(
      "server",
      { arrival_time: start, first_scheduled_time: start + 0.001, first_token_time: start + 0.002, last_token_time: start + 0.004 },
      {
        step_metrics: [
          {
            iter: 1,
            forward_start_time: start,
            forward_end_time: start + 0.001,
            sample_start_time: start + 0.001,
            sample_end_time: start + 0.002,
            gpu_forward_time: 0.5,
            gpu_sample_time: 0.1,
          },
        ],
      },
    )
    .headers();
}

const ASKED = new Headers({ "x-trtllm-return-metrics": " 1 " });

describe("a request's perf metrics", () => {
  test("exist only when the client may have them or a JSONL file wants them", () => {
    expect(requestPerf({ expose: true, collectAlways: false }, new Headers(), clock(0))).toBeUndefined();
    expect(requestPerf({ expose: false, collectAlways: false }, ASKED, clock(0))).toBeUndefined();
    expect(requestPerf({ expose: true, collectAlways: false }, ASKED, clock(0))?.exposed).toBe(true);
    expect(requestPerf({ expose: false, collectAlways: true }, ASKED, clock(0))?.exposed).toBe(false);
  });

  test("merge the proxy's disagg phase with the context and generation workers' lists, in that order", () => {
    const perf = requestPerf({ expose: true, collectAlways: false }, ASKED, clock(100, 100.002, 100.01, 100.02))!;
    perf.markContextDispatch();
    perf.workerAnswered("ctx", "http://ctx:8001", workerHeaders(100.003));
    perf.workerAnswered("gen", "http://gen:8002", new Headers());
    perf.workerEvent("gen", JSON.stringify(workerLists(100.006)));
    perf.markFirstToken();
    perf.markDone();
    const headers = perf.clientHeaders();
    expect(headers[SERVER_TIMING]).toBe(
      "disagg_queue;dur=2.000000, disagg_ttft;dur=10.000000, ctx_queue;dur=1.000000, ctx_ttft;dur=2.000000, ctx_e2e;dur=4.000000, gen_queue;dur=1.000000, gen_ttft;dur=2.000000, gen_e2e;dur=4.000000",
    );
    expect(headers[START_END_TIME]).toStartWith("disagg-start;ts=100.000000000, disagg-end;ts=100.020000000, ctx-start;ts=100.003000000");
    expect(headers[STEP_METRICS]).toBe(
      "ctx-step-1-forward;dur=1.000000, ctx-step-1-sample;dur=1.000000, ctx-step-1-gpu-forward;dur=0.500000, ctx-step-1-gpu-sample;dur=0.100000, gen-step-1-forward;dur=1.000000, gen-step-1-sample;dur=1.000000, gen-step-1-gpu-forward;dur=0.500000, gen-step-1-gpu-sample;dur=0.100000",
    );
    expect(new TextDecoder().decode(perf.clientEvent())).toStartWith('event: trtllm.perf_metrics\ndata: {"Server-Timing":"disagg_queue;');
  });

  test("make the JSONL record trtllm-serve writes for a disaggregated request", () => {
    const perf = requestPerf({ expose: false, collectAlways: true }, new Headers(), clock(7, 7.5, 8, 9))!;
    perf.markContextDispatch();
    perf.workerAnswered("ctx", "http://ctx:8001", workerHeaders(7.6));
    perf.workerAnswered("gen", "http://gen:8002", workerHeaders(7.7));
    perf.markFirstToken();
    perf.markDone();
    const id = 4_611_686_018_427_387_905n;
    const text = JSON.stringify(perf.record(id, id));
    const record = JSON.parse(text) as Record<string, unknown>;
    expect(Object.keys(record)).toEqual([
      "ctx_server",
      "gen_server",
      "disagg_server_arrival_time",
      "disagg_ctx_dispatch_time",
      "disagg_server_first_token_time",
      "status",
      "ctx_perf_metrics",
      "gen_perf_metrics",
      "disagg_request_id",
    ]);
    expect(record).toMatchObject({
      ctx_server: "ctx:8001",
      gen_server: "gen:8002",
      disagg_server_arrival_time: 7,
      disagg_ctx_dispatch_time: 7.5,
      disagg_server_first_token_time: 8,
      status: "complete",
    });
    expect(text).toEndWith(`"disagg_request_id":${id}}`);
    expect(record["gen_perf_metrics"]).toMatchObject({ perf_metrics: { timing_metrics: { arrival_time: 7.7, last_token_time: 7.704 } } });
  });
});
