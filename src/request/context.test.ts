import { describe, expect, test } from "bun:test";
import { ProxyError } from "../errors.ts";
import { traceFrom } from "../observability/trace-context.ts";
import { ReservationTable } from "../routing/reservations.ts";
import { RequestContext } from "./context.ts";
import type { RequestSummary } from "./reports.ts";

/** A clock the test moves by hand. */
function manualClock(): { now: () => number; advance: (ms: number) => void } {
  let at = 1000;
  return { now: () => at, advance: (ms) => void (at += ms) };
}

function started(clock = manualClock()): {
  ctx: RequestContext;
  ends: RequestSummary[];
  clock: ReturnType<typeof manualClock>;
  table: ReservationTable;
} {
  const ends: RequestSummary[] = [];
  const ctx = new RequestContext({
    disaggRequestId: 42n,
    route: "/v1/chat/completions",
    stream: true,
    schedule: "context_first",
    trace: traceFrom(new Headers()),
    now: clock.now,
    onEnd: (summary) => ends.push(summary),
  });
  return { ctx, ends, clock, table: new ReservationTable() };
}

describe("RequestContext", () => {
  test("ends once: legs aborted, reservations released, end callbacks and the summary run once", () => {
    const { ctx, ends, table } = started();
    ctx.hold(table.reserve(42n, "context", "http://c:1", 0));
    ctx.hold(table.reserve(42n, "generation", "http://g:1", 0));
    const seen: (ProxyError | undefined)[] = [];
    ctx.atEnd({ atRequestEnd: (error) => seen.push(error) });
    const failure = new ProxyError("WORKER_TIMEOUT", 504, "slow");
    ctx.end(504, failure);
    ctx.end(200);
    expect(ctx.signal.aborted).toBe(true);
    expect(ctx.signal.reason).toBe(failure);
    expect(table.active()).toBe(0);
    expect(seen).toEqual([failure]);
    expect(ends).toHaveLength(1);
    expect(ends[0]).toMatchObject({ status: 504, outcome: "timeout", error: "slow", cause: undefined });
  });

  test("what waits for the legs' abort runs once, after the signal's own listeners, with its reason; one taken off does not", () => {
    const { ctx } = started();
    const order: string[] = [];
    ctx.signal.addEventListener("abort", () => order.push("signal"));
    ctx.onLegsAborted(() => order.push(`watch ${(ctx.signal.reason as ProxyError).code}`));
    const removed = (): number => order.push("removed");
    ctx.onLegsAborted(removed);
    ctx.offLegsAborted(removed);
    ctx.abortLegs(new ProxyError("CLIENT_GONE", 499, "gone"));
    ctx.abortLegs(new ProxyError("DRAINING", 503, "draining"));
    ctx.end(499);
    expect(order).toEqual(["signal", "watch CLIENT_GONE"]);
    ctx.onLegsAborted(() => order.push("late"));
    expect(order).toEqual(["signal", "watch CLIENT_GONE", "late"]);
  });

  test("a reservation released early is not released again at the end", () => {
    const { ctx, table } = started();
    const held = ctx.hold(table.reserve(42n, "context", "http://c:1", 0));
    held.release();
    const again = table.reserve(43n, "context", "http://c:1", 0);
    ctx.end(200);
    expect(table.load("context", "http://c:1")).toBe(1);
    again.release();
  });

  test("what happened on the way reaches the summary; times come from the injected clock", () => {
    const { ctx, ends, clock } = started();
    clock.advance(5);
    ctx.markFirstByte();
    clock.advance(7);
    ctx.markFirstToken();
    ctx.markFirstByte();
    ctx.legServed("context", "http://c:1");
    ctx.legServed("generation", "http://g:1");
    ctx.retried();
    ctx.continuesAs(77n);
    ctx.sent(3);
    ctx.sent(new TextEncoder().encode("é").byteLength);
    clock.advance(8);
    ctx.end(200);
    expect(ends[0]).toMatchObject({
      disaggRequestId: 42n,
      engineRequestId: 77n,
      contextWorker: "http://c:1",
      generationWorker: "http://g:1",
      retries: 1,
      bytesOut: 5,
      ttfbMs: 5,
      ttftMs: 12,
      durationMs: 20,
      outcome: "ok",
      error: undefined,
    });
    expect(ctx.replyId).toBe("77");
    ctx.namedByWorker("cmpl-own");
    expect(ctx.replyId).toBe("cmpl-own");
  });

  test("an internal error keeps its cause for the error line; success ends as a client-gone abort of the legs", () => {
    const a = started();
    const cause = new TypeError("boom");
    a.ctx.end(500, new ProxyError("INTERNAL", 500, "Internal server error", { cause }));
    expect(a.ends[0]).toMatchObject({ outcome: "internal_error", cause });
    const b = started();
    b.ctx.end(200);
    expect(b.ctx.signal.aborted).toBe(true);
    expect((b.ctx.signal.reason as ProxyError).code).toBe("CLIENT_GONE");
  });
});
