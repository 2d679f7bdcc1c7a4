import { describe, expect, test } from "bun:test";
import { eventually, startCluster } from "./support/cluster.ts";

/** The value of one sample in a Prometheus text exposition (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string> = {}): number {
  for (const line of text.split("\n")) {
    if (!line.startsWith(name)) continue;
    const rest = line.slice(name.length);
    if (rest[0] !== " " && rest[0] !== "{") continue;
    if (!Object.entries(labels).every(([k, v]) => rest.includes(`${k}="${v}"`))) continue;
    return Number(rest.slice(rest.lastIndexOf(" ") + 1));
  }
  return 0;
}

const chat = (content: string, stream = false): object => ({ model: "m", messages: [{ role: "user", content }], max_tokens: 3, stream });

describe("Prometheus metrics", () => {
  test("counters and histograms move as requests of each outcome complete", async () => {
    await using cluster = await startCluster({
      contexts: [{ faults: { rejectStatus: 503 } }, {}],
      config: { contextRouter: "round_robin", requestTimeoutMs: 300, streamStartWaitMs: 30, keepaliveIntervalMs: 50 },
    });
    const scrape = async (): Promise<string> => (await fetch(`${cluster.url}/prometheus/metrics`)).text();
    await (await cluster.post("/v1/chat/completions", chat("first goes to the failing worker, then retried"))).text();
    await (await cluster.post("/v1/chat/completions", chat("[[emu ctx.prefill_ms=200]] streamed", true))).text();
    await (await cluster.post("/v1/chat/completions", chat("[[emu gen.reject=400]]"))).text();
    await (await cluster.post("/v1/chat/completions", { model: "m" })).text();
    await eventually(() => cluster.proxy.app.requests.active.size === 0);
    const text = await scrape();
    expect(sample(text, "total_requests_total")).toBe(3);
    expect(sample(text, "stream_requests_total")).toBe(1);
    expect(sample(text, "nonstream_requests_total")).toBe(2);
    expect(sample(text, "validation_exceptions_total")).toBe(1);
    expect(sample(text, "ctx_retry_requests_total")).toBeGreaterThanOrEqual(1);
    expect(sample(text, "ctx_error_requests_total")).toBeGreaterThanOrEqual(1);
    expect(sample(text, "gen_error_requests_total")).toBe(1);
    expect(sample(text, "gen_completed_requests_total")).toBe(2);
    expect(sample(text, "gen_first_token_latency_seconds_count")).toBe(2);
    expect(sample(text, "ctx_complete_latency_seconds_bucket", { le: "+Inf" })).toBeGreaterThanOrEqual(3);
    expect(sample(text, "disagg_proxy_requests_total", { route: "/v1/chat/completions", outcome: "ok" })).toBe(2);
    expect(sample(text, "disagg_proxy_requests_total", { route: "/v1/chat/completions", outcome: "worker_error" })).toBe(1);
    expect(sample(text, "disagg_proxy_requests_total", { route: "/v1/chat/completions", outcome: "rejected" })).toBe(1);
    expect(sample(text, "disagg_proxy_keepalives_sent_total", { route: "/v1/chat/completions" })).toBeGreaterThanOrEqual(1);
    expect(sample(text, "disagg_proxy_streams_open")).toBe(0);
    expect(sample(text, "disagg_proxy_worker_healthy", { role: "generation" })).toBe(1);
    expect(await (await fetch(`${cluster.url}/metrics`)).text()).toContain("total_requests_total 3");
  });

  test("in-flight gauges and open streams show a running stream; a disconnect is counted", async () => {
    await using cluster = await startCluster({ generations: [{ tokenMs: 50 }] });
    const client = new AbortController();
    const response = await cluster.post("/v1/chat/completions", chat("[[emu tokens=40]]", true), { signal: client.signal });
    const reader = response.body!.getReader();
    await reader.read();
    const during = await (await fetch(`${cluster.url}/metrics`)).text();
    expect(sample(during, "disagg_proxy_streams_open")).toBe(1);
    expect(sample(during, "disagg_proxy_worker_in_flight", { role: "generation" })).toBe(1);
    client.abort();
    await eventually(() => cluster.proxy.app.requests.active.size === 0);
    const after = await (await fetch(`${cluster.url}/metrics`)).text();
    expect(sample(after, "disagg_proxy_streams_open")).toBe(0);
    expect(sample(after, "disagg_proxy_worker_in_flight", { role: "generation" })).toBe(0);
    expect(sample(after, "disagg_proxy_client_disconnects_total", { route: "/v1/chat/completions" })).toBe(1);
  });
});
