import { describe, expect, test } from "bun:test";
import { createMetrics, type ScrapeGaugeSource } from "./metrics.ts";
import { LONG_TIME_BUCKETS, SHORT_TIME_BUCKETS } from "./metrics-families.ts";
import { bucketBounds, CHAT, valueOf } from "./metrics-test-support.ts";

const noWorkers: ScrapeGaugeSource = { workers: () => [] };

const UPSTREAM_COUNTERS = [
  "total_requests",
  "stream_requests",
  "nonstream_requests",
  "validation_exceptions",
  "http_exceptions",
  "internal_errors",
  "total_responses",
  ...["ctx", "gen"].flatMap((p) => ["total_requests", "error_requests", "retry_requests", "completed_requests"].map((n) => `${p}_${n}`)),
];
const UPSTREAM_HISTOGRAMS = ["ctx", "gen"].flatMap((p) =>
  ["first_token_latency_seconds", "complete_latency_seconds", "per_token_latency_seconds"].map((n) => `${p}_${n}`),
);

describe("names and types", () => {
  test("every upstream counter is exposed with the _total suffix, starting at 0", async () => {
    const text = await createMetrics(noWorkers).render();
    for (const name of UPSTREAM_COUNTERS) {
      expect(text).toContain(`# TYPE ${name}_total counter\n`);
      expect(valueOf(text, `${name}_total`)).toBe(0);
    }
  });

  test("every upstream histogram is exposed as a histogram", async () => {
    const text = await createMetrics(noWorkers).render();
    for (const name of UPSTREAM_HISTOGRAMS) expect(text).toContain(`# TYPE ${name} histogram\n`);
  });

  test("the proxy's own families are exposed under disagg_proxy_ with their types", async () => {
    const text = await createMetrics(noWorkers).render();
    for (const name of ["requests_total", "validation_failures_total", "client_disconnects_total", "keepalives_sent_total"]) {
      expect(text).toContain(`# TYPE disagg_proxy_${name} counter\n`);
    }
    for (const name of ["streams_open", "worker_in_flight", "worker_healthy"])
      expect(text).toContain(`# TYPE disagg_proxy_${name} gauge\n`);
  });

  test("the content type is Prometheus text exposition 0.0.4", () => {
    expect(createMetrics(noWorkers).contentType).toBe("text/plain; version=0.0.4; charset=utf-8");
  });
});

describe("buckets", () => {
  test("first-token and per-token histograms use upstream's short buckets, complete latency its long ones", async () => {
    const text = await createMetrics(noWorkers).render();
    for (const p of ["ctx", "gen"]) {
      for (const [name, buckets] of [
        ["first_token_latency_seconds", SHORT_TIME_BUCKETS],
        ["per_token_latency_seconds", SHORT_TIME_BUCKETS],
        ["complete_latency_seconds", LONG_TIME_BUCKETS],
      ] as const) {
        const bounds = bucketBounds(text, `${p}_${name}`);
        expect(bounds.at(-1)).toBe("+Inf");
        expect(bounds.slice(0, -1).map(Number)).toEqual([...buckets]);
      }
    }
    expect(SHORT_TIME_BUCKETS).toEqual([
      0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10, 20, 40, 80, 160, 640, 2560,
    ]);
    expect(LONG_TIME_BUCKETS).toEqual([0.1, 0.3, 0.5, 0.8, 1, 1.5, 2, 2.5, 5, 10, 15, 20, 30, 40, 50, 60, 120, 240, 480, 960, 1920]);
  });

  test('integral bucket bounds are written as Python\'s client writes them (le="1.0")', async () => {
    const bounds = bucketBounds(await createMetrics(noWorkers).render(), "gen_complete_latency_seconds");
    expect(bounds.slice(0, 6)).toEqual(["0.1", "0.3", "0.5", "0.8", "1.0", "1.5"]);
    expect(bounds).toContain("1920.0");
  });
});

describe("values move per call", () => {
  test("an accepted request counts once in total and once in stream or non-stream", async () => {
    const metrics = createMetrics(noWorkers);
    metrics.requestAccepted(CHAT, true);
    metrics.requestAccepted(CHAT, true);
    metrics.requestAccepted("/v1/completions", false);
    const text = await metrics.render();
    expect([
      valueOf(text, "total_requests_total"),
      valueOf(text, "stream_requests_total"),
      valueOf(text, "nonstream_requests_total"),
    ]).toEqual([3, 2, 1]);
  });

  test("a refused request counts as a validation exception and under its route", async () => {
    const metrics = createMetrics(noWorkers);
    metrics.validationFailed(CHAT);
    const text = await metrics.render();
    expect(valueOf(text, "validation_exceptions_total")).toBe(1);
    expect(valueOf(text, `disagg_proxy_validation_failures_total{route="${CHAT}"}`)).toBe(1);
    expect(valueOf(text, "total_requests_total")).toBe(0);
  });

  test("every ended request is a response; 4xx and 5xx answers are HTTP exceptions; internal_error is an internal error", async () => {
    const metrics = createMetrics(noWorkers);
    metrics.requestEnded(CHAT, "ok", 200);
    metrics.requestEnded(CHAT, "worker_error", 200); // failed mid-stream, after its 200 headers
    metrics.requestEnded(CHAT, "rejected", 400);
    metrics.requestEnded(CHAT, "internal_error", 500);
    const text = await metrics.render();
    expect(valueOf(text, "total_responses_total")).toBe(4);
    expect(valueOf(text, "http_exceptions_total")).toBe(2);
    expect(valueOf(text, "internal_errors_total")).toBe(1);
    expect(valueOf(text, `disagg_proxy_requests_total{route="${CHAT}",outcome="worker_error"}`)).toBe(1);
    expect(valueOf(text, `disagg_proxy_requests_total{route="${CHAT}",outcome="ok"}`)).toBe(1);
  });

  test("attempts, retries and errors count per role under ctx_ and gen_", async () => {
    const metrics = createMetrics(noWorkers);
    metrics.upstreamAttempt("context");
    metrics.upstreamAttempt("context");
    metrics.upstreamRetry("context");
    metrics.upstreamError("context");
    metrics.upstreamAttempt("generation");
    const text = await metrics.render();
    expect(valueOf(text, "ctx_total_requests_total")).toBe(2);
    expect(valueOf(text, "ctx_retry_requests_total")).toBe(1);
    expect(valueOf(text, "ctx_error_requests_total")).toBe(1);
    expect(valueOf(text, "gen_total_requests_total")).toBe(1);
    expect(valueOf(text, "gen_error_requests_total")).toBe(0);
  });

  test("a completed leg observes first-token, complete and mean per-token latency", async () => {
    const metrics = createMetrics(noWorkers);
    metrics.upstreamCompleted("generation", 0.5, 2.5, 11);
    const text = await metrics.render();
    expect(valueOf(text, "gen_completed_requests_total")).toBe(1);
    expect(valueOf(text, "gen_first_token_latency_seconds_sum")).toBe(0.5);
    expect(valueOf(text, 'gen_first_token_latency_seconds_bucket{le="0.25"}')).toBe(0);
    expect(valueOf(text, 'gen_first_token_latency_seconds_bucket{le="0.5"}')).toBe(1);
    expect(valueOf(text, "gen_complete_latency_seconds_sum")).toBe(2.5);
    expect(valueOf(text, "gen_per_token_latency_seconds_sum")).toBe(0.2);
    expect(valueOf(text, "gen_per_token_latency_seconds_count")).toBe(1);
    expect(valueOf(text, "ctx_completed_requests_total")).toBe(0);
  });

  test("a leg without a known token count, or with one token, observes no per-token latency", async () => {
    const metrics = createMetrics(noWorkers);
    metrics.upstreamCompleted("context", 0.1, 0.1);
    metrics.upstreamCompleted("context", 0.1, 0.1, 1);
    const text = await metrics.render();
    expect(valueOf(text, "ctx_completed_requests_total")).toBe(2);
    expect(valueOf(text, "ctx_first_token_latency_seconds_count")).toBe(2);
    expect(valueOf(text, "ctx_per_token_latency_seconds_count")).toBe(0);
  });

  test("non-finite durations are skipped and negative ones count as zero, never throwing", async () => {
    const metrics = createMetrics(noWorkers);
    expect(() => metrics.upstreamCompleted("generation", Number.NaN, Number.POSITIVE_INFINITY, 5)).not.toThrow();
    metrics.upstreamCompleted("generation", -0.001, 1, 2);
    const text = await metrics.render();
    expect(valueOf(text, "gen_completed_requests_total")).toBe(2);
    expect(valueOf(text, "gen_first_token_latency_seconds_count")).toBe(1);
    expect(valueOf(text, 'gen_first_token_latency_seconds_bucket{le="0.001"}')).toBe(1);
    expect(valueOf(text, "gen_per_token_latency_seconds_sum")).toBe(1);
  });

  test("open streams go up and down; keepalives and client disconnects count per route", async () => {
    const metrics = createMetrics(noWorkers);
    metrics.streamOpened();
    metrics.streamOpened();
    metrics.streamClosed();
    metrics.keepaliveSent(CHAT);
    metrics.keepaliveSent(CHAT);
    metrics.clientDisconnected("/v1/responses");
    const text = await metrics.render();
    expect(valueOf(text, "disagg_proxy_streams_open")).toBe(1);
    expect(valueOf(text, `disagg_proxy_keepalives_sent_total{route="${CHAT}"}`)).toBe(2);
    expect(valueOf(text, 'disagg_proxy_client_disconnects_total{route="/v1/responses"}')).toBe(1);
  });
});
