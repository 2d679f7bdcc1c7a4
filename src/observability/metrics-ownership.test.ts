import { describe, expect, test } from "bun:test";
import { register as promClientGlobalRegistry } from "prom-client";
import { createMetrics, type ProxyMetrics, type ScrapeGaugeSource } from "./metrics.ts";
import { CHAT, valueOf } from "./metrics-test-support.ts";

type Worker = ReturnType<ScrapeGaugeSource["workers"]>[number];

const noWorkers: ScrapeGaugeSource = { workers: () => [] };

async function scrape(metrics: ProxyMetrics, series: string): Promise<number | undefined> {
  return valueOf(await metrics.render(), series);
}

describe("ownership", () => {
  test("two instances do not share counters", async () => {
    const a = createMetrics(noWorkers);
    const b = createMetrics(noWorkers);
    a.requestAccepted(CHAT, true);
    a.upstreamAttempt("generation");
    expect(await scrape(a, "total_requests_total")).toBe(1);
    expect(await scrape(b, "total_requests_total")).toBe(0);
    expect(await scrape(b, "gen_total_requests_total")).toBe(0);
  });

  test("nothing is registered in prom-client's global registry", () => {
    createMetrics(noWorkers).requestAccepted(CHAT, false);
    expect(promClientGlobalRegistry.getMetricsAsArray()).toHaveLength(0);
  });

  test("the worker source is read at every scrape, and a worker that left the pool leaves the exposition", async () => {
    let reads = 0;
    let workers: Worker[] = [
      { role: "context", url: "http://ctx-1:8001", inFlight: 3, healthy: true },
      { role: "generation", url: "http://gen-1:8002", inFlight: 0, healthy: false },
    ];
    const metrics = createMetrics({ workers: () => (reads++, workers) });
    expect(reads).toBe(0);
    let text = await metrics.render();
    expect(reads).toBe(1);
    expect(valueOf(text, 'disagg_proxy_worker_in_flight{role="context",url="http://ctx-1:8001"}')).toBe(3);
    expect(valueOf(text, 'disagg_proxy_worker_healthy{role="context",url="http://ctx-1:8001"}')).toBe(1);
    expect(valueOf(text, 'disagg_proxy_worker_healthy{role="generation",url="http://gen-1:8002"}')).toBe(0);

    workers = [{ role: "context", url: "http://ctx-1:8001", inFlight: 7, healthy: true }];
    text = await metrics.render();
    expect(reads).toBe(2);
    expect(valueOf(text, 'disagg_proxy_worker_in_flight{role="context",url="http://ctx-1:8001"}')).toBe(7);
    expect(valueOf(text, 'disagg_proxy_worker_in_flight{role="generation",url="http://gen-1:8002"}')).toBeUndefined();
  });
});
