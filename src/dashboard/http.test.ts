import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { dashboardErrorResponse, dashboardHttp, type EventWatcher } from "./http.ts";
import { STREAM_LIMITS } from "./stream-slots.ts";
import { DashboardRecorder, type DashboardSource } from "./recorder.ts";

const source: DashboardSource = {
  version: "t",
  pid: 1,
  inFlight: () => 0,
  draining: () => false,
  admission: () => ({ inFlight: 0, waiting: 0, limit: 0 }),
  workers: () => [],
  discovery: () => ({ source: "static" }),
  protectedByKeys: () => false,
};

function hashOf(text: string): string {
  return `'sha256-${createHash("sha256").update(text, "utf8").digest("base64")}'`;
}

function eventsRequest(signal: AbortSignal = new AbortController().signal): Request {
  return new Request("http://proxy/dashboard/events", { signal });
}

/** A watcher without a key: the i-th of STREAM_LIMITS.perAddress per address. */
function watcher(i: number): EventWatcher {
  return { address: `10.0.0.${Math.floor(i / STREAM_LIMITS.perAddress)}`, operator: false, stillAllowed: () => true };
}

function anonymous(address: string): EventWatcher {
  return { address, operator: false, stillAllowed: () => true };
}

describe("dashboard HTTP answers", () => {
  test("the policy's hashes are those of the page's one inline script and one inline style", async () => {
    const page = dashboardHttp(new DashboardRecorder(source)).page();
    const html = await page.text();
    const csp = page.headers.get("content-security-policy")!;
    const script = /<script>([\s\S]*)<\/script>/.exec(html)![1]!;
    const style = /<style>([\s\S]*)<\/style>/.exec(html)![1]!;
    expect(csp).toContain(`script-src ${hashOf(script)};`);
    expect(csp).toContain(`style-src ${hashOf(style)};`);
    expect(html.match(/<script/g)).toHaveLength(1);
  });

  test("the event stream starts with a snapshot, and each tick sends the next with only new chart points", async () => {
    let now = 1000;
    const recorder = new DashboardRecorder(source, () => now);
    recorder.tick();
    const response = dashboardHttp(recorder).events(eventsRequest(), () => {});
    const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
    let text = "";
    while (!text.includes("event: snapshot")) text += (await reader.read()).value;
    now = 2000;
    recorder.tick();
    let next = "";
    while (!next.includes("\n\n")) next += (await reader.read()).value;
    const snapshot = JSON.parse(next.slice(next.indexOf("data: ") + 6)) as { series: { at: number[] } };
    expect(snapshot.series.at).toHaveLength(1);
    await reader.cancel();
  });

  test(`at most ${STREAM_LIMITS.total} streams at once; one closing (client gone or cancelled) frees its place`, async () => {
    const http = dashboardHttp(new DashboardRecorder(source));
    const clients = Array.from({ length: STREAM_LIMITS.total }, () => new AbortController());
    const responses = clients.map((client, i) => http.events(eventsRequest(client.signal), () => {}, watcher(i)));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    expect(http.events(eventsRequest(), () => {}, watcher(1000)).status).toBe(429);
    clients[0]!.abort();
    const next = http.events(eventsRequest(), () => {}, watcher(0));
    expect(next.status).toBe(200);
    expect(http.events(eventsRequest(), () => {}, watcher(1000)).status).toBe(429);
    await next.body!.cancel();
    expect(http.events(eventsRequest(), () => {}, watcher(0)).status).toBe(200);
  });

  test("one address holds at most a few streams, others still get theirs; the operator's (a key shown) is never refused while anonymous streams are held: the oldest is ended", async () => {
    const http = dashboardHttp(new DashboardRecorder(source), { perAddress: 2, total: 4 });
    const operator = { address: "10.0.0.1", operator: true, stillAllowed: () => true };
    const first = http.events(eventsRequest(), () => {}, anonymous("10.0.0.1"));
    const kept = [first, http.events(eventsRequest(), () => {}, anonymous("10.0.0.1"))];
    const refused = http.events(eventsRequest(), () => {}, anonymous("10.0.0.1"));
    expect(refused.status).toBe(429);
    expect(await refused.text()).toBe("At most 2 dashboards may watch at once from one address\n");
    kept.push(
      http.events(eventsRequest(), () => {}, anonymous("10.0.0.2")),
      http.events(eventsRequest(), () => {}, anonymous("10.0.0.3")),
    );
    expect(kept.map((response) => response.status)).toEqual([200, 200, 200, 200]);
    expect(http.events(eventsRequest(), () => {}, anonymous("10.0.0.4")).status).toBe(429);
    // Full of anonymous streams: the operator gets one, and the oldest anonymous stream ends.
    const operators = [1, 2, 3, 4].map(() => http.events(eventsRequest(), () => {}, operator));
    expect(operators.map((response) => response.status)).toEqual([200, 200, 200, 200]);
    expect(await first.text()).toStartWith("retry: 2000");
    expect(http.events(eventsRequest(), () => {}, operator).status).toBe(429);
  });

  test("an IPv6 host's /64 counts as one client (one host is given a /64), and an IPv4-mapped address as its IPv4 address", async () => {
    const http = dashboardHttp(new DashboardRecorder(source), { perAddress: 2, total: 8 });
    const held = ["2001:db8:1:2::1", "2001:db8:1:2:ffff::9"].map((address) => http.events(eventsRequest(), () => {}, anonymous(address)));
    expect(held.map((response) => response.status)).toEqual([200, 200]);
    expect(http.events(eventsRequest(), () => {}, anonymous("2001:db8:1:2:abcd::7")).status).toBe(429);
    expect(http.events(eventsRequest(), () => {}, anonymous("2001:db8:1:3::1")).status).toBe(200);
    expect(http.events(eventsRequest(), () => {}, anonymous("10.0.0.7")).status).toBe(200);
    expect(http.events(eventsRequest(), () => {}, anonymous("::ffff:10.0.0.7")).status).toBe(200);
    expect(http.events(eventsRequest(), () => {}, anonymous("::ffff:10.0.0.7")).status).toBe(429);
  });

  test("the JSON snapshot leaves out the chart points before `after`", async () => {
    let now = 1000;
    const recorder = new DashboardRecorder(source, () => now);
    recorder.tick();
    now = 2000;
    recorder.tick();
    const body = (await dashboardHttp(recorder).data(new Request("http://proxy/dashboard/data?after=1000")).json()) as {
      series: { at: number[] };
    };
    expect(body.series.at).toEqual([2000]);
  });

  test("a 401 asks for Basic credentials; other refusals do not", () => {
    expect(dashboardErrorResponse(401, "no").headers.get("www-authenticate")).toStartWith("Basic ");
    expect(dashboardErrorResponse(404, "no").headers.get("www-authenticate")).toBeNull();
  });
});
