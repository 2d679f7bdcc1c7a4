import { describe, expect, test } from "bun:test";
import { keepAliveBound, startQuietSweep, type SweptServer } from "./keep-alive.ts";

describe("server_keep_alive_timeout on the runtime's 4-second timer", () => {
  test.each([0.5, 1, 2, 4, 10, 30, 251.5, 252])("%p s is never cut short: the runtime bound leaves one whole tick more", (seconds) => {
    const bound = keepAliveBound(seconds);
    // A t-second runtime timeout fires after at least 4·(ceil(t/4) − 1) s of silence.
    expect(4 * (Math.ceil(bound.runtimeS / 4) - 1)).toBeGreaterThanOrEqual(seconds);
    // ... and at most two ticks after the setting.
    expect(bound.runtimeS).toBeLessThanOrEqual(seconds + 8);
    expect(bound.runtimeS).toBeLessThanOrEqual(255);
    expect(bound.firstRequestS).toBe(bound.runtimeS);
    // The sweep closes idle connections sooner when the server is quiet.
    expect(bound.quietCloseS).toBe(seconds);
  });

  test.each([252.5, 256, 3600])(
    "%p s is beyond the runtime's 255 s: idle connections wait for a quiet server, first requests keep a finite bound",
    (seconds) => {
      expect(keepAliveBound(seconds)).toEqual({ runtimeS: 0, firstRequestS: 255, quietCloseS: seconds });
    },
  );
});

class FakeServer implements SweptServer {
  pendingRequests = 0;
  port: number | undefined = 1;
  closes = 0;
  closeIdleConnections(): number {
    this.closes++;
    return 0;
  }
}

describe("the quiet sweep", () => {
  test("idle connections are closed only once nothing has been in flight for the bound, and the sweep ends with the server", async () => {
    const busy = new FakeServer();
    busy.pendingRequests = 1;
    const quiet = new FakeServer();
    // Each sample of a running sweep reads the latest request's time: counting the reads shows whether it still runs.
    const samples = { busy: 0, quiet: 0 };
    startQuietSweep(busy, 0.2, () => (samples.busy++, 0));
    startQuietSweep(quiet, 0.2, () => (samples.quiet++, 0));
    const deadline = performance.now() + 5000;
    while (quiet.closes === 0 && performance.now() < deadline) await Bun.sleep(50);
    expect(quiet.closes).toBeGreaterThan(0);
    expect(busy.closes).toBe(0);
    quiet.port = 0;
    busy.port = 0;
    const before = { ...samples };
    // Four sweep intervals: a sweep that did not end would have sampled again.
    await Bun.sleep(1000);
    expect(samples).toEqual(before);
  }, 10_000);

  test("a request started since the last sample holds the sweep back", async () => {
    const server = new FakeServer();
    const samples = { count: 0 };
    // Nothing in flight at any sample, but each time a request began a moment before it (began and
    // ended in between). Read at the sample itself, not set by a timer of the test's own: a timer
    // held up past the bound by a loaded machine would let the sweep see a quiet spell.
    startQuietSweep(server, 0.2, () => (samples.count++, performance.now() - 1));
    // Three quiet bounds (0.2 s plus one 0.25 s interval each) pass: without those requests it would have swept.
    while (samples.count < 6) await Bun.sleep(50);
    expect(server.closes).toBe(0);
    server.port = 0;
  }, 10_000);
});
