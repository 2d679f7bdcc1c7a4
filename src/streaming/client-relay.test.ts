import { describe, expect, test } from "bun:test";
import { ProxyError } from "../errors.ts";
import { traceFrom } from "../observability/trace-context.ts";
import { RequestContext } from "../request/context.ts";
import type { DialectStream } from "./dialect.ts";
import { respondWithStream } from "./respond-with-stream.ts";
import type { Answer, Ending, StreamClock } from "./stream-request.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** A clock moved by hand: `advance` fires the timers that fall due, in order; one due already fires at once. */
function manualClock(): StreamClock & { advance(ms: number): void } {
  let now = 0;
  let timers: { at: number; fire: () => void }[] = [];
  const setTimer = (ms: number, fire: () => void): { at: number; fire: () => void } | undefined => {
    if (ms <= 0) {
      fire();
      return undefined;
    }
    const timer = { at: now + ms, fire };
    timers.push(timer);
    return timer;
  };
  const clear = (timer: unknown): void => void (timers = timers.filter((t) => t !== timer));
  return {
    now: () => now,
    setTimer(ms, fire) {
      const timer = setTimer(ms, fire);
      return () => clear(timer);
    },
    arm: (ms, target) => setTimer(ms, () => target.deadlinePassed()),
    disarm: (armed) => clear(armed),
    advance(ms) {
      const until = now + ms;
      for (;;) {
        const due = timers.filter((t) => t.at <= until).toSorted((a, b) => a.at - b.at)[0];
        if (due === undefined) break;
        timers = timers.filter((t) => t !== due);
        now = due.at;
        due.fire();
      }
      now = until;
    },
  };
}

/** How the answer's request ended, as the route is told it. */
function endingOf(answer: Answer): Promise<Ending> {
  const ended = answer.ended;
  if (ended instanceof Promise) return ended;
  return new Promise((resolve) => ended.whenEnded({ requestEnded: resolve }));
}

/** Upper-cases the worker's bytes; opening, keepalive and failure are fixed words. */
const dialect: DialectStream = {
  opening: () => encoder.encode("OPEN;"),
  push: (chunk) => encoder.encode(decoder.decode(chunk).toUpperCase()),
  keepalive: () => encoder.encode("PING;"),
  end: () => encoder.encode("END;"),
  fail: (error) => encoder.encode(`FAIL ${error.code};`),
  workerError: undefined,
  delivered: false,
};

function context(): RequestContext {
  return new RequestContext({
    disaggRequestId: 1n,
    route: "/r",
    stream: true,
    schedule: "context_first",
    trace: traceFrom(new Headers()),
    onEnd: () => {},
  });
}

/** A stream opened before the worker answered (start wait 0), on the manual clock. */
async function opened(upstream: Promise<ReadableStream<Uint8Array>>, startWaitMs = 0) {
  const clock = manualClock();
  const ctx = context();
  const timings = { startWaitMs, keepaliveIntervalMs: 100, silenceTimeoutMs: 1000, clock };
  const answer = await respondWithStream({
    ctx,
    upstream,
    dialect,
    timings,
    headers: () => new Headers(),
    errorResponse: (error) => new Response(error.message, { status: error.status }),
  });
  const reader = answer.response.body!.getReader();
  const read = async (): Promise<string> => {
    const next = await reader.read();
    return next.done ? "<done>" : decoder.decode(next.value);
  };
  // The bytes up to the end, however the runtime cut them into chunks.
  const rest = async (): Promise<string> => {
    let text = "";
    for (let next = await read(); next !== "<done>"; next = await read()) text += next;
    return text;
  };
  return { clock, ctx, answer, reader, read, rest };
}

describe("the client relay, on an injected clock", () => {
  test("opens at once, sends a keepalive on every keepalive interval of silence, then relays", async () => {
    const worker = Promise.withResolvers<ReadableStream<Uint8Array>>();
    const { clock, read, rest, answer } = await opened(worker.promise);
    expect(answer.response.status).toBe(200);
    expect(await read()).toBe("OPEN;");
    clock.advance(99);
    clock.advance(1);
    expect(await read()).toBe("PING;");
    clock.advance(100);
    expect(await read()).toBe("PING;");
    worker.resolve(new Response("hello").body!);
    expect(await rest()).toBe("HELLOEND;");
    expect(await endingOf(answer)).toEqual({ status: 200, error: undefined });
  });

  test("the wait for the worker is not silence; its silence beyond the bound ends the stream in-band, once", async () => {
    const upstream = Promise.withResolvers<ReadableStream<Uint8Array>>();
    const { clock, read, rest, answer, ctx } = await opened(upstream.promise);
    expect(await read()).toBe("OPEN;");
    // Before the worker's stream started, only keepalives go out, however long it takes.
    clock.advance(5000);
    expect(ctx.signal.aborted).toBe(false);
    upstream.resolve(new ReadableStream<Uint8Array>({ start: (c) => c.enqueue(encoder.encode("a")) }));
    let before = "";
    while (!before.endsWith("A")) before += await read();
    expect(before).toMatch(/^(PING;)+A$/);
    clock.advance(1000);
    expect(await rest()).toMatch(/^(PING;)*FAIL WORKER_TIMEOUT;$/);
    const ending = await endingOf(answer);
    expect(ending.status).toBe(200);
    expect(ending.error?.code).toBe("WORKER_TIMEOUT");
    expect(ctx.signal.aborted).toBe(true);
  });

  test("a stream that ends before the runtime reads its body still sends all it wrote, then closes", async () => {
    const { clock, rest, answer } = await opened(Promise.resolve(new ReadableStream<Uint8Array>({ start: () => {} })));
    await Promise.resolve();
    clock.advance(1000);
    expect((await endingOf(answer)).error?.code).toBe("WORKER_TIMEOUT");
    expect(await rest()).toMatch(/^OPEN;(PING;)*FAIL WORKER_TIMEOUT;$/);
  });

  test("a worker stream that breaks before its first byte, within the start wait, fails in-band with 502, not as a 500", async () => {
    const broken = new ReadableStream<Uint8Array>({ start: (c) => c.error(new Error("connection reset")) });
    const { read, answer } = await opened(Promise.resolve(broken), 60_000);
    expect(answer.response.status).toBe(200);
    expect(await read()).toBe("FAIL WORKER_STREAM_BROKEN;");
    expect(await read()).toBe("<done>");
    const ending = await endingOf(answer);
    expect(ending.error?.code).toBe("WORKER_STREAM_BROKEN");
    expect(ending.error?.status).toBe(502);
  });

  test("a client that leaves ends the request with 499 and stops the timer", async () => {
    const { clock, reader, read, answer } = await opened(new Promise(() => {}));
    expect(await read()).toBe("OPEN;");
    await reader.cancel();
    const ending = await endingOf(answer);
    expect(ending).toEqual({ status: 499, error: new ProxyError("CLIENT_GONE", 499, "Client disconnected") });
    clock.advance(10_000);
  });
});
