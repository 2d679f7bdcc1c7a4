import { describe, expect, test } from "bun:test";
import { Packr } from "msgpackr/pack";
import { jsonInteger, readInteger } from "../../json/json.ts";
import { steadySeconds } from "./perf-state.ts";
import { at, json, sseEvents } from "../test-support.ts";
import { startEmulatedWorker } from "../worker.ts";

const CHAT = { model: "m", messages: [{ role: "user", content: "hello there" }], max_tokens: 3 };
const ASK = { "content-type": "application/json", "x-trtllm-return-metrics": "1" };

function chat(url: string, body: unknown, headers: Record<string, string> = { "content-type": "application/json" }): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, { method: "POST", headers, body: JSON.stringify(body) });
}

describe("emulated worker: per-request perf metrics", () => {
  test("a non-streamed answer carries the four metrics headers only when asked for", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const asked = await chat(worker.url, CHAT, ASK);
    await asked.text();
    expect(asked.headers.get("server-timing")).toMatch(
      /^server_queue;dur=\d+\.\d{6}, server_ttft;dur=\d+\.\d{6}, server_e2e;dur=\d+\.\d{6}$/,
    );
    expect(asked.headers.get("x-trtllm-start-end-time")).toMatch(/^server-start;ts=\d+\.\d{9}, server-end;ts=\d+\.\d{9}$/);
    expect(asked.headers.get("x-trtllm-step-metrics")).toMatch(/^server-step-\d+-forward;dur=/);
    expect(asked.headers.get("x-trtllm-ctx-chunk-metrics")).toMatch(/^server-ctx-chunk-0-forward;dur=/);
    const plain = await chat(worker.url, CHAT);
    await plain.text();
    expect(plain.headers.get("server-timing")).toBeNull();
  });

  test("a stream that asked ends with a trtllm.perf_metrics event after [DONE]; one that did not, does not", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const events = sseEvents(await (await chat(worker.url, { ...CHAT, stream: true }, ASK)).text());
    expect(events.at(-2)?.data).toBe("[DONE]");
    expect(events.at(-1)?.event).toBe("trtllm.perf_metrics");
    const metrics = JSON.parse(events.at(-1)?.data ?? "{}") as Record<string, string>;
    expect(Object.keys(metrics)).toEqual([
      "Server-Timing",
      "X-TRTLLM-Start-End-Time",
      "X-TRTLLM-Step-Metrics",
      "X-TRTLLM-Ctx-Chunk-Metrics",
    ]);
    const plain = sseEvents(await (await chat(worker.url, { ...CHAT, stream: true })).text());
    expect(plain.at(-1)?.data).toBe("[DONE]");
  });

  test("step and chunk metrics are dropped when the payload exceeds 80 KiB", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const response = await chat(
      worker.url,
      { ...CHAT, messages: [{ role: "user", content: "long [[emu tokens=600]]" }], max_tokens: 600 },
      ASK,
    );
    await response.text();
    expect(response.headers.get("server-timing")).not.toBeNull();
    expect(response.headers.get("x-trtllm-start-end-time")).not.toBeNull();
    expect(response.headers.get("x-trtllm-step-metrics")).toBeNull();
    expect(response.headers.get("x-trtllm-ctx-chunk-metrics")).toBeNull();
  });

  test("GET /steady_clock_offset answers receive and transmit stamps of the worker's clock, the probe delay apart", async () => {
    await using worker = startEmulatedWorker({ role: "context", clockSkewS: 500, clockProbeDelayMs: 20 });
    const probe = await json(await fetch(`${worker.url}/steady_clock_offset`));
    const receive = Number(probe["receive_ts"]);
    const transmit = Number(probe["transmit_ts"]);
    expect(transmit - receive).toBeGreaterThanOrEqual(0.019);
    expect(Math.abs(receive - 500 - steadySeconds())).toBeLessThan(1);
  });

  test("POST /steady_clock_offset shifts every timestamp the worker reports", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", clockSkewS: 1000 });
    const set = await fetch(`${worker.url}/steady_clock_offset`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ offset: -1000 }),
    });
    expect(set.status).toBe(200);
    const response = await chat(worker.url, CHAT, ASK);
    await response.text();
    const start = Number(/server-start;ts=([\d.]+)/.exec(response.headers.get("x-trtllm-start-end-time") ?? "")?.[1]);
    expect(Math.abs(start - steadySeconds())).toBeLessThan(1);
  });

  test("GET /perf_metrics hands over each finished request's record once, with its ctx_request_id", async () => {
    await using worker = startEmulatedWorker({ role: "context", perfMetricsMaxRequests: 10 });
    const id = 4_611_686_018_427_387_905n;
    const body = {
      ...CHAT,
      stream: false,
      stream_options: null,
      disaggregated_params: { request_type: "context_only", disagg_request_id: jsonInteger(id) },
    };
    await (await chat(worker.url, body)).text();
    const text = await (await fetch(`${worker.url}/perf_metrics`)).text();
    const [record, ...rest] = JSON.parse(text) as unknown[];
    expect(rest).toEqual([]);
    expect(text).toContain(`"ctx_request_id":${id}`);
    expect(Object.keys((record as { perf_metrics: { timing_metrics: object } }).perf_metrics.timing_metrics)).toEqual([
      "server_arrival_time",
      "arrival_time",
      "first_scheduled_time",
      "first_token_time",
      "server_first_token_time",
      "last_token_time",
    ]);
    expect(await (await fetch(`${worker.url}/perf_metrics`)).json()).toEqual([]);
  });

  test("a msgpack body under X-TRTLLM-Msgpack: 1 is read, a 63-bit id exactly", async () => {
    await using worker = startEmulatedWorker({ role: "context" });
    const id = 9_223_372_036_854_775_000n;
    const body = {
      ...CHAT,
      stream: false,
      stream_options: null,
      disaggregated_params: { request_type: "context_only", disagg_request_id: id },
    };
    const response = await fetch(`${worker.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-trtllm-msgpack": "1" },
      body: new Packr({ useRecords: false }).pack(body),
    });
    expect(response.status).toBe(200);
    const answer = await json(response);
    expect(readInteger(at(answer, "choices", 0, "disaggregated_params", "disagg_request_id"))).toBe(id);
    expect(worker.requests[0]?.disaggRequestId).toBe(id);
  });
});
