import { describe, expect, test } from "bun:test";
import type { DashboardSnapshot } from "../src/dashboard/snapshot.ts";
import { demoBanner, startDemo } from "../src/demo.ts";
import { silentLogger } from "../src/observability/logger.ts";
import { mkdtempSync, writeFileSync } from "node:fs";
import { connect, type Socket } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { eventually, startCluster, type TestCluster } from "./support/cluster.ts";
import { fakeWorker } from "./support/fake-worker.ts";

const chat = (content: string, stream = false): object => ({ model: "m", messages: [{ role: "user", content }], max_tokens: 3, stream });

/** The value of one sample in a Prometheus text exposition (0 when absent). */
function sample(text: string, name: string, labels: Record<string, string>): number {
  for (const line of text.split("\n")) {
    if (!line.startsWith(`${name}{`)) continue;
    if (!Object.entries(labels).every(([k, v]) => line.includes(`${k}="${v}"`))) continue;
    return Number(line.slice(line.lastIndexOf(" ") + 1));
  }
  return 0;
}

function basic(password: string): RequestInit {
  return { headers: { authorization: `Basic ${btoa(`ops:${password}`)}` } };
}

async function snapshot(cluster: TestCluster, init?: RequestInit): Promise<DashboardSnapshot> {
  const response = await fetch(`${cluster.url}/dashboard/data`, init);
  expect(response.status).toBe(200);
  return (await response.json()) as DashboardSnapshot;
}

/** Reads SSE events from a response body until `count` snapshot events arrived. */
async function snapshotEvents(response: Response, count: number): Promise<DashboardSnapshot[]> {
  const reader = response.body!.pipeThrough(new TextDecoderStream()).getReader();
  const events: DashboardSnapshot[] = [];
  let buffered = "";
  while (events.length < count) {
    const { value, done } = await reader.read();
    if (done) break;
    buffered += value;
    let end: number;
    while ((end = buffered.indexOf("\n\n")) >= 0) {
      const event = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const data = event.split("\n").find((line) => line.startsWith("data: "));
      if (event.includes("event: snapshot") && data !== undefined) events.push(JSON.parse(data.slice(6)) as DashboardSnapshot);
    }
  }
  await reader.cancel();
  return events;
}

describe("the dashboard", () => {
  test("serves one self-contained page under 60 KB with a strict Content-Security-Policy", async () => {
    await using cluster = await startCluster();
    const response = await fetch(`${cluster.url}/dashboard`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const csp = response.headers.get("content-security-policy")!;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toMatch(/script-src 'sha256-[A-Za-z0-9+/=]+'(;|$)/);
    expect(csp).not.toContain("unsafe");
    const html = await response.text();
    expect(new TextEncoder().encode(html).length).toBeLessThanOrEqual(60 * 1024);
    // Nothing is loaded from elsewhere: no src or href leaves the page, no @import or url().
    expect(html).not.toMatch(/\s(src|href)="(?!data:)[^"]*"/);
    expect(html).not.toMatch(/@import|url\(/);
  });

  test("its figures are the metrics' counters and /cluster_info's workers", async () => {
    await using cluster = await startCluster({
      contexts: [{ protocolVersion: "1.3.0rc14" }, {}],
      config: { contextRouter: "round_robin" },
    });
    for (let i = 0; i < 4; i++) await (await cluster.post("/v1/chat/completions", chat(`hello ${i}`, i % 2 === 0))).text();
    await (await cluster.post("/v1/chat/completions", chat("[[emu gen.reject=400]]"))).text();
    await (await cluster.post("/v1/completions", { model: "m" })).text();
    await eventually(() => cluster.proxy.app.requests.active.size === 0);
    // The rejected generation leg's hand-off is claimed after its request ended: a generation
    // worker is in flight with that claim until it settles.
    await eventually(() => cluster.proxy.app.handoffs.pending === 0);
    const data = await snapshot(cluster);
    const metrics = await (await fetch(`${cluster.url}/metrics`)).text();
    expect(data.proxy.requests.length).toBe(3);
    for (const row of data.proxy.requests) {
      expect(row.total).toBe(sample(metrics, "disagg_proxy_requests_total", { route: row.route, outcome: row.outcome }));
    }
    expect(data.proxy.requests.find((row) => row.outcome === "ok")!.total).toBe(4);
    const info = (await (await fetch(`${cluster.url}/cluster_info`)).json()) as {
      workers: Record<string, { url: string; ready: boolean; in_flight: number; version: string | null }[]>;
    };
    const listed = Object.entries(info.workers).flatMap(([role, workers]) =>
      workers.map((w) => ({ role, url: w.url, ready: w.ready, inFlight: w.in_flight, version: w.version ?? undefined })),
    );
    const shown = data.workers.map((w) => ({
      role: w.role as string,
      url: w.url,
      ready: w.state === "healthy",
      inFlight: w.inFlight,
      version: w.version,
    }));
    expect(shown).toEqual(listed);
    expect(shown[0]!.version).toBe("1.3.0rc14");
    // The failed request names its id, its worker and the worker's message; never a body.
    const failure = data.failures.find((f) => f.outcome === "worker_error")!;
    expect(failure.disaggRequestId).toMatch(/^\d+$/);
    expect(failure.worker).toBe(cluster.generations[0]!.url);
    expect(failure.status).toBe(400);
    const rejected = data.failures.find((f) => f.outcome === "rejected")!;
    expect(rejected).toMatchObject({ route: "/v1/completions", status: 400 });
    expect(rejected.disaggRequestId).toBeUndefined();
    expect(JSON.stringify(data.failures)).not.toContain("hello");
    expect(data.proxy.draining).toBe(false);
    cluster.proxy.app.requests.startDraining();
    expect((await snapshot(cluster)).proxy.draining).toBe(true);
  });

  test("streams a snapshot at once and another after each second's tick, chart points sent once", async () => {
    await using cluster = await startCluster();
    await (await cluster.post("/v1/chat/completions", chat("tick"))).text();
    const response = await fetch(`${cluster.url}/dashboard/events`);
    expect(response.headers.get("content-type")).toBe("text/event-stream");
    const [first, second, third] = await snapshotEvents(response, 3);
    expect(first!.workers.length).toBe(2);
    const firstAt = first!.series.at.at(-1) ?? 0;
    expect(second!.series.at.every((at) => at > firstAt)).toBe(true);
    expect(third!.series.at.length).toBe(1);
    expect(third!.now).toBeGreaterThan(first!.now);
  });

  test("a killed worker shows as unhealthy, with when it left rotation", async () => {
    await using cluster = await startCluster({ contexts: [{}, {}], config: { healthCheckIntervalMs: 20, healthCheckFailures: 2 } });
    const victim = cluster.contexts[1]!;
    await victim.stop();
    let row: DashboardSnapshot["workers"][number] | undefined;
    const deadline = performance.now() + 5000;
    while (row?.state !== "unhealthy" && performance.now() < deadline) {
      row = (await snapshot(cluster)).workers.find((w) => w.url === victim.url);
    }
    expect(row!.state).toBe("unhealthy");
    expect(row!.ejectedAt).toBeNumber();
    expect(row!.lastCheckAt!).toBeGreaterThanOrEqual(row!.ejectedAt!);
  });

  test("is protected like /metrics: open by default, behind the key (Bearer or Basic password) with --protect-metrics", async () => {
    await using open = await startCluster({ config: { apiKeysFromEnv: "dash-key" } });
    expect((await fetch(`${open.url}/dashboard`)).status).toBe(200);
    await using guarded = await startCluster({ config: { apiKeysFromEnv: "dash-key", protectMetrics: true } });
    for (const path of ["/dashboard", "/dashboard/data", "/dashboard/events"]) {
      const refused = await fetch(guarded.url + path);
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toBe('Basic realm="disagg-proxy dashboard", charset="UTF-8"');
    }
    expect((await fetch(`${guarded.url}/dashboard`, basic("wrong"))).status).toBe(401);
    expect((await fetch(`${guarded.url}/dashboard`, basic("dash-key"))).status).toBe(200);
    expect((await snapshot(guarded, { headers: { authorization: "Bearer dash-key" } })).workers.length).toBe(2);
    // A key in the URL opens nothing.
    expect((await fetch(`${guarded.url}/dashboard?key=dash-key`)).status).toBe(401);
    // Basic credentials open the read-only routes (the dashboard, the metrics: a scraper's basic_auth), not the API.
    expect((await fetch(`${guarded.url}/metrics`, basic("dash-key"))).status).toBe(200);
    expect((await fetch(`${guarded.url}/v1/models`, basic("dash-key"))).status).toBe(401);
  });

  test("open (client keys, no --protect-metrics), it shows no value a client sent or a worker wrote: status, outcome, worker and the proxy's words for the code", async () => {
    // A worker that quotes the client's prompt in its refusal, as pydantic's errors quote input values.
    using quoting = fakeWorker(async (request) => {
      if (request.method !== "POST") return new Response(null, { status: 404 });
      const body = (await request.json()) as { messages: { content: string }[] };
      return Response.json(
        { object: "error", message: `Invalid prompt: ${body.messages[0]!.content}`, type: "BadRequestError", param: null, code: 400 },
        { status: 400 },
      );
    });
    const keys = { apiKeysFromEnv: "client-key", contextServers: [`http://127.0.0.1:${quoting.port}`] };
    const withKey = { headers: { "content-type": "application/json", authorization: "Bearer client-key" } };
    await using open = await startCluster({ contexts: [], config: keys });
    const refused = await open.post("/v1/chat/completions", chat("SECRET-FROM-BODY 4111 1111"), withKey);
    expect([refused.status, ((await refused.json()) as { message: string }).message]).toEqual([
      400,
      "Invalid prompt: SECRET-FROM-BODY 4111 1111",
    ]);
    const shown = await snapshot(open);
    expect(JSON.stringify(shown)).not.toContain("SECRET-FROM-BODY");
    expect(shown.failures[0]).toMatchObject({
      outcome: "worker_error",
      status: 400,
      worker: `http://127.0.0.1:${quoting.port}`,
      message: "WORKER_HTTP_ERROR: the worker answered with an error",
    });
    // Behind the keys, the operator sees what the client was told.
    await using guarded = await startCluster({ contexts: [], config: { ...keys, protectMetrics: true } });
    await (await guarded.post("/v1/chat/completions", chat("SECRET-FROM-BODY"), withKey)).text();
    expect((await snapshot(guarded, { headers: { authorization: "Bearer client-key" } })).failures[0]!.message).toBe(
      "Invalid prompt: SECRET-FROM-BODY",
    );
  });

  test("a key removed by SIGHUP ends the event streams it opened at the next tick; a stream on a kept key goes on", async () => {
    const file = join(mkdtempSync(join(tmpdir(), "dash-keys-")), "keys");
    writeFileSync(file, "removed-key\nkept-key\n");
    await using cluster = await startCluster({ config: { apiKeyFile: file, protectMetrics: true } });
    interface Reader {
      read(): Promise<{ value?: string | undefined; done: boolean }>;
      cancel(): Promise<void>;
    }
    const stream = async (key: string): Promise<Reader> => {
      const response = await fetch(`${cluster.url}/dashboard/events`, { headers: { authorization: `Bearer ${key}` } });
      expect(response.status).toBe(200);
      return response.body!.pipeThrough(new TextDecoderStream()).getReader();
    };
    const snapshotsUntilEnd = async (reader: Reader, stopAfter: number): Promise<{ snapshots: number; ended: boolean }> => {
      let snapshots = 0;
      while (snapshots < stopAfter) {
        const { value, done } = await reader.read();
        if (done) return { snapshots, ended: true };
        snapshots += (value ?? "").split("event: snapshot").length - 1;
      }
      await reader.cancel();
      return { snapshots, ended: false };
    };
    const removed = await stream("removed-key");
    const kept = await stream("kept-key");
    // Each has its first snapshot: both streams are open before the reload.
    expect((await removed.read()).done).toBe(false);
    expect((await kept.read()).done).toBe(false);
    writeFileSync(file, "kept-key\n");
    cluster.proxy.app.reloadClientKeys();
    expect((await fetch(`${cluster.url}/dashboard/data`, { headers: { authorization: "Bearer removed-key" } })).status).toBe(401);
    // The removed key's stream ends at the next tick without another snapshot; the kept one gets two more.
    const [afterRemoved, afterKept] = await Promise.all([snapshotsUntilEnd(removed, 3), snapshotsUntilEnd(kept, 2)]);
    expect(afterRemoved).toEqual({ snapshots: 0, ended: true });
    expect(afterKept).toEqual({ snapshots: 2, ended: false });
  });

  test("`disagg-proxy demo` prints the dashboard's URL, and it answers", async () => {
    const demo = await startDemo(0, silentLogger, "t");
    try {
      const url = /dashboard: +(\S+)/.exec(demoBanner(demo))?.[1];
      expect(url).toBe(`${demo.proxy.url.origin}/dashboard`);
      expect((await fetch(url!)).status).toBe(200);
    } finally {
      await demo.stop();
    }
  });

  test("--no-dashboard turns it off", async () => {
    await using cluster = await startCluster({ config: { dashboard: false } });
    for (const path of ["/dashboard", "/dashboard/data", "/dashboard/events"]) expect((await fetch(cluster.url + path)).status).toBe(404);
    expect(cluster.proxy.app.dashboard).toBeUndefined();
  });
});

/** A raw GET of /dashboard/events from `localAddress`, held open; resolves with its status once the head arrived. */
function openEvents(url: string, localAddress: string, headers: Record<string, string> = {}): Promise<{ status: number; socket: Socket }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect({ host: target.hostname, port: Number(target.port), localAddress }, () => {
      const lines = Object.entries(headers).map(([name, value]) => `${name}: ${value}\r\n`);
      socket.write(`GET /dashboard/events HTTP/1.1\r\nHost: ${target.host}\r\n${lines.join("")}\r\n`);
    });
    let head = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      if (head.includes("\r\n")) return;
      head += chunk;
      if (head.includes("\r\n")) resolve({ status: Number(head.split(" ")[1]), socket });
    });
    socket.once("error", reject);
  });
}

describe("dashboard event streams are capped per client address", () => {
  test("32 anonymous streams from one address get 8, another address still gets its own, the operator with a key gets one; filled from several addresses, the operator still gets one", async () => {
    await using cluster = await startCluster({ config: { apiKeysFromEnv: "operator-key" } });
    const held: Socket[] = [];
    try {
      const open = async (from: string, headers?: Record<string, string>): Promise<number> => {
        const { status, socket } = await openEvents(cluster.url, from, headers);
        held.push(socket);
        return status;
      };
      const statuses: number[] = [];
      for (let i = 0; i < 32; i++) statuses.push(await open("127.0.0.1"));
      expect([statuses.filter((s) => s === 200).length, statuses.filter((s) => s === 429).length]).toEqual([8, 24]);
      expect(await open("127.0.0.2")).toBe(200);
      expect(await open("127.0.0.1", { authorization: "Bearer operator-key" })).toBe(200);
      // 10 held; 22 more from three other addresses fill the 32.
      const filling: number[] = [];
      for (const [from, count] of [
        ["127.0.0.3", 8],
        ["127.0.0.4", 8],
        ["127.0.0.5", 6],
      ] as const)
        for (let i = 0; i < count; i++) filling.push(await open(from));
      expect(filling.every((status) => status === 200)).toBe(true);
      expect(await open("127.0.0.6")).toBe(429);
      expect(await open("127.0.0.6", { authorization: `Basic ${btoa("ops:operator-key")}` })).toBe(200);
    } finally {
      for (const socket of held) socket.destroy();
    }
  });
});
