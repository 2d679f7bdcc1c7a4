import { describe, expect, test } from "bun:test";
import { RandomIds, randomHexBytes, sampled, setLegTraceHeaders, traceFrom } from "./trace-context.ts";

const CLIENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";

describe("trace context", () => {
  test("a client's traceparent keeps its trace id and flags; its tracestate is carried; the proxy's span is new", () => {
    const trace = traceFrom(new Headers({ traceparent: CLIENT, tracestate: "vendor=x" }));
    expect(trace).toMatchObject({
      traceId: "0af7651916cd43dd8448eb211c80319c",
      clientSpanId: "b7ad6b7169203331",
      flags: "01",
      tracestate: "vendor=x",
    });
    expect(trace.serverSpanId).toMatch(/^[0-9a-f]{16}$/);
    expect(trace.serverSpanId).not.toBe("b7ad6b7169203331");
  });

  test("each leg attempt's traceparent carries the trace id and the span id it was given", () => {
    const trace = traceFrom(new Headers({ traceparent: CLIENT }));
    const a = randomHexBytes(8);
    const b = randomHexBytes(8);
    expect(setLegTraceHeaders({}, trace, a)["traceparent"]).toBe(`00-${trace.traceId}-${a}-01`);
    expect(setLegTraceHeaders({}, trace, b)["traceparent"]).toBe(`00-${trace.traceId}-${b}-01`);
    expect(a).not.toBe(b);
  });

  test.each([
    "garbage",
    "00-00000000000000000000000000000000-b7ad6b7169203331-01",
    "ff-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
  ])("an invalid traceparent %p starts a new, sampled trace", (value) => {
    const trace = traceFrom(new Headers({ traceparent: value }));
    expect(trace.traceId).toMatch(/^[0-9a-f]{32}$/);
    expect(trace.traceId).not.toBe("0af7651916cd43dd8448eb211c80319c");
    expect(trace.clientSpanId).toBeUndefined();
    expect(trace.tracestate).toBeUndefined();
    expect(sampled(trace)).toBe(true);
  });

  test("a client's unsampled trace stays unsampled", () => {
    expect(sampled(traceFrom(new Headers({ traceparent: CLIENT.replace(/-01$/, "-00") })))).toBe(false);
  });
});

describe("RandomIds", () => {
  test("ids are lowercase hex of twice the bytes asked for, and differ across pool refills", () => {
    const ids = new RandomIds();
    const seen = new Set<string>();
    // 2,000 span ids of 8 bytes span four refills of the 4 KiB pool; a 16-byte trace id between them.
    for (let i = 0; i < 2000; i++) {
      const span = ids.hex(8);
      expect(span).toMatch(/^[0-9a-f]{16}$/);
      seen.add(span);
      if (i % 100 === 0) expect(ids.hex(16)).toMatch(/^[0-9a-f]{32}$/);
    }
    expect(seen.size).toBe(2000);
  });

  test("an id larger than the pool is still whole", () => {
    expect(new RandomIds().hex(5000)).toMatch(/^[0-9a-f]{10000}$/);
  });
});
