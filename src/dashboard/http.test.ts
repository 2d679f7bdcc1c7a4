import { describe, expect, test } from "bun:test";
import { createHash } from "node:crypto";
import { dashboardErrorResponse, dashboardHttp, MAX_EVENT_STREAMS } from "./http.ts";
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

  test(`at most ${MAX_EVENT_STREAMS} streams at once; one closing (client gone or cancelled) frees its place`, async () => {
    const http = dashboardHttp(new DashboardRecorder(source));
    const clients = Array.from({ length: MAX_EVENT_STREAMS }, () => new AbortController());
    const responses = clients.map((client) => http.events(eventsRequest(client.signal), () => {}));
    expect(responses.every((r) => r.status === 200)).toBe(true);
    expect(http.events(eventsRequest(), () => {}).status).toBe(429);
    clients[0]!.abort();
    const next = http.events(eventsRequest(), () => {});
    expect(next.status).toBe(200);
    expect(http.events(eventsRequest(), () => {}).status).toBe(429);
    await next.body!.cancel();
    expect(http.events(eventsRequest(), () => {}).status).toBe(200);
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
