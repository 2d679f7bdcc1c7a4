import { describe, expect, test } from "bun:test";
import { memoryLogger } from "./logger.ts";
import { OtlpExporter, SPAN_KIND_CLIENT, type SpanRecord } from "./otlp-exporter.ts";

function span(i: number): SpanRecord {
  return {
    traceId: "a".repeat(32),
    spanId: i.toString(16).padStart(16, "0"),
    parentSpanId: undefined,
    name: "s",
    kind: SPAN_KIND_CLIENT,
    startMs: 1_700_000_000_000.5,
    endMs: 1_700_000_000_001.25,
    attributes: { n: i, ok: true, s: "x", f: 0.5 },
    error: i % 2 === 0 ? undefined : "boom",
  };
}

interface Posted {
  url: string;
  spans: Record<string, unknown>[];
}

function recorder(status = 200): { posted: Posted[]; fetch: (url: string, init: RequestInit) => Promise<Response> } {
  const posted: Posted[] = [];
  return {
    posted,
    fetch: async (url, init) => {
      const body = JSON.parse(typeof init.body === "string" ? init.body : "{}") as {
        resourceSpans: { scopeSpans: { spans: Record<string, unknown>[] }[] }[];
      };
      posted.push({ url, spans: body.resourceSpans[0]?.scopeSpans[0]?.spans ?? [] });
      return new Response(null, { status });
    },
  };
}

describe("OTLP/HTTP exporter", () => {
  test("spans leave in batches as OTLP JSON to <endpoint>/v1/traces, times in unix nanoseconds", async () => {
    const sink = recorder();
    const exporter = new OtlpExporter({
      endpoint: "http://collector:4318",
      serviceName: "p",
      serviceVersion: "1",
      logger: memoryLogger(),
      fetch: sink.fetch,
      batchSize: 2,
    });
    for (let i = 0; i < 3; i++) exporter.add(span(i));
    await exporter.flush();
    expect(sink.posted.map((p) => p.spans.length)).toEqual([2, 1]);
    expect(sink.posted[0]?.url).toBe("http://collector:4318/v1/traces");
    expect(sink.posted[0]?.spans[0]).toMatchObject({
      traceId: "a".repeat(32),
      kind: 3,
      startTimeUnixNano: "1700000000000500000",
      endTimeUnixNano: "1700000000001250000",
      status: { code: 1 },
      attributes: [
        { key: "n", value: { intValue: "0" } },
        { key: "ok", value: { boolValue: true } },
        { key: "s", value: { stringValue: "x" } },
        { key: "f", value: { doubleValue: 0.5 } },
      ],
    });
    expect(sink.posted[0]?.spans[1]).toMatchObject({ status: { code: 2, message: "boom" } });
    expect(exporter.exported).toBe(3);
  });

  test("a full queue drops spans, counted, without blocking or throwing", async () => {
    const sink = recorder();
    const exporter = new OtlpExporter({
      endpoint: "http://c/v1/traces",
      serviceName: "p",
      serviceVersion: "1",
      logger: memoryLogger(),
      fetch: sink.fetch,
      maxQueue: 4,
      batchSize: 100,
    });
    for (let i = 0; i < 10; i++) exporter.add(span(i));
    expect(exporter.dropped).toBe(6);
    await exporter.flush();
    expect(exporter.exported).toBe(4);
  });

  test("a refused or failed export drops its batch, counted, and warns", async () => {
    const logger = memoryLogger();
    const refused = new OtlpExporter({ endpoint: "http://c", serviceName: "p", serviceVersion: "1", logger, fetch: recorder(503).fetch });
    refused.add(span(1));
    await refused.flush();
    const failed = new OtlpExporter({
      endpoint: "http://c",
      serviceName: "p",
      serviceVersion: "1",
      logger,
      fetch: () => Promise.reject(new Error("down")),
    });
    failed.add(span(1));
    await failed.flush();
    expect([refused.dropped, failed.dropped]).toEqual([1, 1]);
    expect(logger.records.map((r) => r["msg"])).toEqual(["span export refused", "span export failed"]);
  });
});
