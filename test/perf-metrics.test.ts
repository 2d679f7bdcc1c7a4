import { describe, expect, test } from "bun:test";
import { mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCluster, type ClusterOptions } from "./support/cluster.ts";

const CHAT = { model: "m", messages: [{ role: "user", content: "hello there" }], max_tokens: 4 };
const ASK = { "content-type": "application/json", "x-trtllm-return-metrics": "1" };
const FAST_CLOCK = { clockProbeDelayMs: 2 };
const METRICS_HEADERS = ["server-timing", "x-trtllm-start-end-time", "x-trtllm-step-metrics", "x-trtllm-ctx-chunk-metrics"];

function cluster(options: ClusterOptions = {}) {
  return startCluster({ contexts: [FAST_CLOCK], generations: [FAST_CLOCK], ...options });
}

function perfEvents(text: string): string[] {
  return text.split("\n\n").filter((frame) => frame.includes("event: trtllm.perf_metrics"));
}

describe.each(["context_first", "generation_first"] as const)("%s: per-request perf metrics", (schedule) => {
  test("with return_perf_metrics, a client asking gets the merged headers; both workers were asked with the header", async () => {
    await using c = await cluster({ config: { schedule, returnPerfMetrics: true } });
    const response = await c.post("/v1/chat/completions", CHAT, { headers: ASK });
    expect(response.status).toBe(200);
    await response.text();
    const timing = response.headers.get("server-timing") ?? "";
    expect(timing).toMatch(
      /^disagg_queue;dur=\d+\.\d{6}, disagg_ttft;dur=\d+\.\d{6}, ctx_queue;dur=\d+\.\d{6}, ctx_ttft;.*gen_queue;.*gen_kv_transfer;dur=\d+\.\d{6}$/,
    );
    expect(timing).not.toContain("server_");
    expect(response.headers.get("x-trtllm-start-end-time")).toMatch(
      /^disagg-start;ts=\d+\.\d{9}, disagg-end;ts=\d+\.\d{9}, ctx-start;ts=.*, gen-end;ts=\d+\.\d{9}$/,
    );
    expect(response.headers.get("x-trtllm-step-metrics")).toMatch(/ctx-step-\d+-forward;dur=.*gen-step-\d+-gpu-sample;dur=/);
    expect(response.headers.get("x-trtllm-ctx-chunk-metrics")).toStartWith("ctx-ctx-chunk-0-forward;dur=");
    for (const worker of [c.contexts[0]!, c.generations[0]!]) {
      expect(worker.requests.find((r) => r.phase !== "other")?.headers["x-trtllm-return-metrics"]).toBe("1");
    }
  });

  test("a stream that asked ends with one trtllm.perf_metrics event, the proxy's merged one, after [DONE]", async () => {
    await using c = await cluster({ config: { schedule, returnPerfMetrics: true } });
    const text = await (await c.post("/v1/chat/completions", { ...CHAT, stream: true }, { headers: ASK })).text();
    const events = perfEvents(text);
    expect(events).toHaveLength(1);
    expect(text.indexOf("data: [DONE]")).toBeLessThan(text.indexOf("event: trtllm.perf_metrics"));
    expect(text.endsWith("\n\n")).toBe(true);
    const data = JSON.parse(events[0]!.split("data: ")[1]!) as Record<string, string>;
    expect(data["Server-Timing"]).toMatch(/^disagg_queue;.*ctx_e2e;.*gen_e2e;/);
    expect(data["X-TRTLLM-Step-Metrics"]).toContain("gen-step-");
    expect(JSON.stringify(data)).not.toContain("server");
  });
});

describe("per-request perf metrics appear only when asked for and enabled", () => {
  test("a client that does not ask gets no metrics, and the workers are not asked", async () => {
    await using c = await cluster({ config: { returnPerfMetrics: true } });
    const json = await c.post("/v1/chat/completions", CHAT);
    await json.text();
    for (const name of METRICS_HEADERS) expect(json.headers.get(name)).toBeNull();
    const stream = await (await c.post("/v1/chat/completions", { ...CHAT, stream: true })).text();
    expect(perfEvents(stream)).toEqual([]);
    const requests = [...c.contexts[0]!.requests, ...c.generations[0]!.requests];
    // Two requests through both legs: the loop has something to check.
    expect(requests.filter((r) => r.phase !== "other")).toHaveLength(4);
    for (const r of requests) expect(r.headers["x-trtllm-return-metrics"]).toBeUndefined();
  });

  test("without return_perf_metrics the client's header is ignored", async () => {
    await using c = await cluster();
    const json = await c.post("/v1/chat/completions", CHAT, { headers: ASK });
    await json.text();
    for (const name of METRICS_HEADERS) expect(json.headers.get(name)).toBeNull();
    expect(perfEvents(await (await c.post("/v1/chat/completions", { ...CHAT, stream: true }, { headers: ASK })).text())).toEqual([]);
    expect(c.generations[0]!.requests.every((r) => r.headers["x-trtllm-return-metrics"] === undefined)).toBe(true);
  });

  test("perf_metrics_output_dir asks the workers for every request, withholds their events from clients, and writes one record each", async () => {
    const dir = mkdtempSync(join(tmpdir(), "perf-out-"));
    try {
      await using c = await cluster({ config: { perfMetricsOutputDir: dir } });
      const stream = await (await c.post("/v1/chat/completions", { ...CHAT, stream: true })).text();
      expect(perfEvents(stream)).toEqual([]);
      expect(stream.trimEnd().endsWith("data: [DONE]")).toBe(true);
      const json = await c.post("/v1/completions", { model: "m", prompt: "hi there", max_tokens: 2 }, { headers: ASK });
      await json.text();
      expect(json.headers.get("server-timing")).toBeNull();
      expect(c.generations[0]!.requests.filter((r) => r.phase !== "other").every((r) => r.headers["x-trtllm-return-metrics"] === "1")).toBe(
        true,
      );
      await c.proxy.app.telemetry.flush();
      const [file, ...others] = readdirSync(dir);
      expect(others).toEqual([]);
      expect(file).toMatch(/^perf_metrics-disagg-.+-\d+-\d{8}T\d{6}Z\.jsonl$/);
      const lines = readFileSync(join(dir, file!), "utf8").trimEnd().split("\n");
      expect(lines).toHaveLength(2);
      const ids = c.generations[0]!.requests.filter((r) => r.phase === "generation").map((r) => r.disaggRequestId);
      for (const [index, line] of lines.entries()) {
        expect(line).toContain(`"disagg_request_id":${ids[index]}}`);
        const record = JSON.parse(line) as Record<string, { perf_metrics?: { timing_metrics: Record<string, number> } }>;
        expect(record).toMatchObject({
          ctx_server: new URL(c.contexts[0]!.url).host,
          gen_server: new URL(c.generations[0]!.url).host,
          status: "complete",
        });
        expect(Object.keys(record["gen_perf_metrics"]?.perf_metrics?.timing_metrics ?? {})).toEqual([
          "arrival_time",
          "last_token_time",
          "first_scheduled_time",
          "first_token_time",
        ]);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test("a worker whose steady clock is off by 1000 s is aligned at start-up: its stamps fall inside the proxy's", async () => {
    await using c = await cluster({ config: { returnPerfMetrics: true }, contexts: [{ ...FAST_CLOCK, clockSkewS: 1000 }] });
    const response = await c.post("/v1/chat/completions", CHAT, { headers: ASK });
    await response.text();
    const stamps = Object.fromEntries(
      (response.headers.get("x-trtllm-start-end-time") ?? "")
        .split(", ")
        .map((item) => item.split(";ts="))
        .map(([name, ts]) => [name, Number(ts)]),
    );
    expect(stamps["ctx-start"]).toBeGreaterThanOrEqual(stamps["disagg-start"]! - 0.05);
    expect(stamps["ctx-end"]).toBeLessThanOrEqual(stamps["disagg-end"]! + 0.05);
    expect(c.logs.filter((l) => l["msg"] === "steady clock offset set").map((l) => Math.round(Number(l["offset_s"])))).toContain(1000);
  });
});

describe("per-request perf metrics on the other routes", () => {
  test("Responses and Anthropic Messages streams end with the proxy's merged event; the worker's own is withheld", async () => {
    await using c = await cluster({ config: { returnPerfMetrics: true } });
    const responses = await (
      await c.post("/v1/responses", { model: "m", input: "hello there", max_output_tokens: 3, stream: true }, { headers: ASK })
    ).text();
    const messages = await (
      await c.post(
        "/v1/messages",
        { model: "m", max_tokens: 3, stream: true, messages: [{ role: "user", content: "hello there" }] },
        { headers: ASK },
      )
    ).text();
    for (const text of [responses, messages]) {
      const events = perfEvents(text);
      expect(events).toHaveLength(1);
      expect(text.endsWith(`${events[0]}\n\n`)).toBe(true);
      expect(events[0]).toContain("disagg_ttft;dur=");
      expect(events[0]).toContain("gen_e2e;dur=");
    }
  });

  test("a non-streamed Responses answer carries the headers", async () => {
    await using c = await cluster({ config: { returnPerfMetrics: true } });
    const response = await c.post("/v1/responses", { model: "m", input: "hello there", max_output_tokens: 3 }, { headers: ASK });
    await response.text();
    expect(response.headers.get("server-timing")).toMatch(/^disagg_queue;.*ctx_ttft;.*gen_e2e;/);
  });
});

describe("GET /perf_metrics", () => {
  test("answers [] unless perf_metrics_max_requests is set", async () => {
    await using c = await cluster();
    await (await c.post("/v1/chat/completions", CHAT)).text();
    expect(await (await fetch(`${c.url}/perf_metrics`)).json()).toEqual([]);
  });

  test("joins both workers' records by ctx_request_id, returns each completed request once", async () => {
    const keep = { ...FAST_CLOCK, perfMetricsMaxRequests: 100 };
    await using c = await cluster({ config: { perfMetricsMaxRequests: 100 }, contexts: [keep], generations: [keep] });
    await (await c.post("/v1/chat/completions", CHAT)).text();
    await (await c.post("/v1/chat/completions", { ...CHAT, stream: true })).text();
    const text = await (await fetch(`${c.url}/perf_metrics`)).text();
    const entries = JSON.parse(text) as Record<string, unknown>[];
    expect(entries).toHaveLength(2);
    for (const entry of entries) {
      expect(Object.keys(entry)).toEqual([
        "ctx_server",
        "gen_server",
        "disagg_server_arrival_time",
        "disagg_server_first_token_time",
        "ctx_perf_metrics",
        "gen_perf_metrics",
      ]);
      expect(entry).toMatchObject({ ctx_server: new URL(c.contexts[0]!.url).host, gen_server: new URL(c.generations[0]!.url).host });
      expect(entry["ctx_perf_metrics"]).toMatchObject({ perf_metrics: { timing_metrics: { arrival_time: expect.any(Number) } } });
    }
    const ids = c.generations[0]!.requests.filter((r) => r.phase === "generation").map((r) => r.disaggRequestId);
    for (const id of ids) expect(text).toContain(`"ctx_request_id":${id}`);
    expect(await (await fetch(`${c.url}/perf_metrics`)).json()).toEqual([]);
  });
});
