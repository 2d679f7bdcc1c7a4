import { describe, expect, test } from "bun:test";
import { startCluster } from "./support/cluster.ts";

const CLIENT_TRACE_ID = "0af7651916cd43dd8448eb211c80319c";
const CLIENT_SPAN_ID = "b7ad6b7169203331";
const CHAT = { model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 3 };

interface OtlpSpan {
  traceId: string;
  spanId: string;
  parentSpanId?: string;
  name: string;
  kind: number;
  status: { code: number; message?: string };
  attributes: { key: string; value: Record<string, unknown> }[];
}

/** A loopback OTLP/HTTP collector: every span POSTed to /v1/traces. */
function fakeCollector() {
  const spans: OtlpSpan[] = [];
  const paths: string[] = [];
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      paths.push(new URL(request.url).pathname);
      const body = (await request.json()) as { resourceSpans: { scopeSpans: { spans: OtlpSpan[] }[] }[] };
      for (const resource of body.resourceSpans) for (const scope of resource.scopeSpans) spans.push(...scope.spans);
      return Response.json({});
    },
  });
  return { spans, paths, endpoint: `http://127.0.0.1:${server.port}`, [Symbol.dispose]: () => void server.stop(true) };
}

function attribute(span: OtlpSpan | undefined, key: string): unknown {
  const value = span?.attributes.find((a) => a.key === key)?.value;
  return value === undefined ? undefined : Object.values(value)[0];
}

function legSpanIds(requests: readonly { phase: string; headers: Record<string, string> }[], phase: string): string[] {
  return requests.filter((r) => r.phase === phase).map((r) => r.headers["traceparent"]!.split("-")[2]!);
}

describe.each(["context_first", "generation_first"] as const)("%s: OTLP export", (schedule) => {
  test.each([false, true])(
    "stream %p: one server span and one client span per leg, whose ids are exactly those the workers received",
    async (stream) => {
      using collector = fakeCollector();
      await using c = await startCluster({ config: { schedule, otlpTracesEndpoint: collector.endpoint } });
      const response = await c.post(
        "/v1/chat/completions",
        { ...CHAT, stream },
        {
          headers: { "content-type": "application/json", traceparent: `00-${CLIENT_TRACE_ID}-${CLIENT_SPAN_ID}-01` },
        },
      );
      await response.text();
      await c.proxy.app.telemetry.flush();
      expect(collector.paths).toEqual(["/v1/traces"]);
      const server = collector.spans.filter((s) => s.name === "disaggregated_request");
      expect(server).toHaveLength(1);
      expect(server[0]).toMatchObject({ traceId: CLIENT_TRACE_ID, parentSpanId: CLIENT_SPAN_ID, kind: 2, status: { code: 1 } });
      expect(attribute(server[0], "http.response.status_code")).toBe("200");
      const ctxSpan = legSpanIds(c.contexts[0]!.requests, "context")[0]!;
      const genSpan = legSpanIds(c.generations[0]!.requests, "generation")[0]!;
      expect(ctxSpan).not.toBe(genSpan);
      const legs = collector.spans.filter((s) => s.kind === 3);
      expect(new Set(legs.map((s) => s.spanId))).toEqual(new Set([ctxSpan, genSpan]));
      expect(legs).toHaveLength(2);
      for (const leg of legs)
        expect(leg).toMatchObject({ traceId: CLIENT_TRACE_ID, parentSpanId: server[0]!.spanId, name: "POST /v1/chat/completions" });
      expect(
        attribute(
          legs.find((s) => s.spanId === ctxSpan),
          "trtllm.role",
        ),
      ).toBe("context");
      // The client asked for "m"; the one served model took it.
      expect([attribute(server[0], "gen_ai.request.model"), attribute(server[0], "trtllm.model")]).toEqual(["m", "emulated-model"]);
    },
  );
});

describe("OTLP export", () => {
  test("a trace the proxy starts is exported under the trace id the workers received, its server span a root", async () => {
    using collector = fakeCollector();
    await using c = await startCluster({ config: { otlpTracesEndpoint: collector.endpoint } });
    await (await c.post("/v1/completions", { model: "m", prompt: "hi there", max_tokens: 2 })).text();
    await c.proxy.app.telemetry.flush();
    const traceId = c.contexts[0]!.requests.find((r) => r.phase === "context")!.headers["traceparent"]!.split("-")[1];
    const server = collector.spans.find((s) => s.name === "disaggregated_request");
    expect(server?.traceId).toBe(traceId);
    expect(server?.parentSpanId).toBeUndefined();
    expect(collector.spans.every((s) => s.traceId === traceId)).toBe(true);
  });

  test("a failed attempt and its retry are two spans, the failure marked as an error", async () => {
    using collector = fakeCollector();
    await using c = await startCluster({
      config: { otlpTracesEndpoint: collector.endpoint, maxRetries: 1 },
      contexts: [{ faults: { rejectStatus: 503 } }, {}],
    });
    await (await c.post("/v1/chat/completions", CHAT)).text();
    await c.proxy.app.telemetry.flush();
    const sent = c.contexts.flatMap((w) => legSpanIds(w.requests, "context"));
    const contextSpans = collector.spans.filter((s) => attribute(s, "trtllm.role") === "context");
    expect(new Set(contextSpans.map((s) => s.spanId))).toEqual(new Set(sent));
    expect(contextSpans).toHaveLength(2);
    expect(new Set(contextSpans.map((s) => `${String(attribute(s, "trtllm.attempt"))}:${s.status.code}`))).toEqual(new Set(["0:2", "1:1"]));
  });

  test("an unsampled client trace is propagated but not exported", async () => {
    using collector = fakeCollector();
    await using c = await startCluster({ config: { otlpTracesEndpoint: collector.endpoint } });
    await (
      await c.post("/v1/chat/completions", CHAT, {
        headers: { "content-type": "application/json", traceparent: `00-${CLIENT_TRACE_ID}-${CLIENT_SPAN_ID}-00` },
      })
    ).text();
    await c.proxy.app.telemetry.flush();
    expect(collector.spans).toEqual([]);
    expect(c.generations[0]!.requests.find((r) => r.phase === "generation")!.headers["traceparent"]).toEndWith("-00");
  });
});
