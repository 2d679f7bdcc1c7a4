import { describe, expect, test } from "bun:test";
import { legTraceHeaders, traceFrom } from "./trace-context.ts";

const CLIENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

describe("trace context", () => {
  test("a client's traceparent keeps its trace id and flags; its tracestate is carried", () => {
    const trace = traceFrom(new Headers({ traceparent: CLIENT, tracestate: "vendor=x" }));
    expect(trace).toEqual({ traceId: "0af7651916cd43dd8448eb211c80319c", parentSpanId: "b7ad6b7169203331", flags: "01", tracestate: "vendor=x" });
  });

  test("each leg attempt gets a new span id under the same trace", () => {
    const trace = traceFrom(new Headers({ traceparent: CLIENT }));
    const a = legTraceHeaders(trace)["traceparent"]!;
    const b = legTraceHeaders(trace)["traceparent"]!;
    expect(a.split("-")[1]).toBe(trace.traceId);
    expect(b.split("-")[1]).toBe(trace.traceId);
    expect(a.split("-")[2]).not.toBe(b.split("-")[2]);
    expect(a.split("-")[2]).not.toBe(trace.parentSpanId);
  });

  test.each(["garbage", "00-00000000000000000000000000000000-b7ad6b7169203331-01", "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"])(
    "an invalid traceparent %p starts a new trace",
    (value) => {
      const trace = traceFrom(new Headers({ traceparent: value }));
      expect(trace.traceId).toMatch(/^[0-9a-f]{32}$/);
      expect(trace.traceId).not.toBe("0af7651916cd43dd8448eb211c80319c");
      expect(trace.tracestate).toBeUndefined();
    },
  );
});
