import { describe, expect, test } from "bun:test";
import { memoryLogger } from "../src/observability/logger.ts";
import { steadySeconds } from "../src/observability/steady-clock.ts";
import { CLOCK_SYNC_MAX_DELAY_S, CLOCK_SYNC_PROBES, syncWorkerClock } from "../src/workers/clock-sync.ts";

/** A /steady_clock_offset endpoint whose clock runs `skew` seconds ahead, optionally stalling before its receive stamp. */
function stubWorker(options: { skew?: number; stallMs?: number; status?: number } = {}) {
  const posted: number[] = [];
  let probes = 0;
  const server = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      if (request.method === "POST") {
        posted.push(((await request.json()) as { offset: number }).offset);
        return new Response(null);
      }
      probes++;
      if (options.status !== undefined) return new Response(null, { status: options.status });
      if (options.stallMs !== undefined) await Bun.sleep(options.stallMs);
      const receive = steadySeconds() + (options.skew ?? 0);
      await Bun.sleep(2);
      return Response.json({ receive_ts: receive, transmit_ts: steadySeconds() + (options.skew ?? 0) });
    },
  });
  return { origin: `http://127.0.0.1:${server.port}`, posted, probes: () => probes, [Symbol.dispose]: () => void server.stop(true) };
}

const deps = () => ({
  fetch: (url: string, init?: RequestInit) => fetch(url, init),
  clock: steadySeconds,
  logger: memoryLogger(),
  timeoutMs: 2000,
  signal: new AbortController().signal,
});

describe("steady clock alignment", () => {
  test("a responsive worker is told to add minus its offset, probing stops at the first good sample", async () => {
    using worker = stubWorker({ skew: 250 });
    const sample = await syncWorkerClock(worker.origin, deps());
    expect(worker.posted).toHaveLength(1);
    expect(worker.posted[0]).toBeCloseTo(-250, 1);
    expect(sample?.delay).toBeLessThan(CLOCK_SYNC_MAX_DELAY_S);
    // A warm-up, then one probe unless the machine is so loaded that the round trip took over 5 ms.
    expect(worker.probes()).toBeGreaterThanOrEqual(2);
    expect(worker.probes()).toBeLessThanOrEqual(1 + CLOCK_SYNC_PROBES);
  });

  test("an estimate from stalled round trips is discarded, after the warm-up and every probe", async () => {
    using worker = stubWorker({ stallMs: 1000 * CLOCK_SYNC_MAX_DELAY_S * 3 });
    expect(await syncWorkerClock(worker.origin, deps())).toBeUndefined();
    expect(worker.posted).toEqual([]);
    expect(worker.probes()).toBe(1 + CLOCK_SYNC_PROBES);
  });

  test("a worker answering an error is not probed again; an unreachable one is skipped quietly", async () => {
    using failing = stubWorker({ status: 503 });
    expect(await syncWorkerClock(failing.origin, deps())).toBeUndefined();
    expect(failing.probes()).toBe(2);
    const gone = stubWorker();
    gone[Symbol.dispose]();
    expect(await syncWorkerClock(gone.origin, deps())).toBeUndefined();
  });
});
