import { describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Chromium } from "./support/chromium.ts";
import { eventually, startCluster } from "./support/cluster.ts";

/**
 * The dashboard in a real browser: Debian's headless Chromium (installed by
 * scripts/test-tools.sh) loads /dashboard from a proxy under traffic.
 * DASHBOARD_SCREENSHOT=path saves the screenshot there (default: the temp dir; never committed).
 */

const chat = (content: string, stream: boolean): object => ({ model: "m", messages: [{ role: "user", content }], max_tokens: 8, stream });

/** In the page: resolves with `condition`'s value once truthy, re-checked on every DOM change (each SSE update is one). */
function waitInPage(condition: string, timeoutMs: number): string {
  return `new Promise((resolve, reject) => {
    const check = () => { const value = (${condition}); if (value) { observer.disconnect(); clearTimeout(timer); resolve(value); } };
    const observer = new MutationObserver(check);
    observer.observe(document.body, { attributes: true, childList: true, subtree: true, characterData: true });
    const timer = setTimeout(() => { observer.disconnect(); reject(new Error(${JSON.stringify(`timed out: ${condition}`)})); }, ${timeoutMs});
    check();
  })`;
}

function sample(text: string, name: string, labels: Record<string, string>): number {
  const line = text
    .split("\n")
    .find((l) => l.startsWith(`${name}{`) && Object.entries(labels).every(([k, v]) => l.includes(`${k}="${v}"`)));
  return line === undefined ? 0 : Number(line.slice(line.lastIndexOf(" ") + 1));
}

interface PageWorker {
  role: string;
  url: string;
  state: string;
  inFlight: number;
  version: string;
}

const WORKER_ROWS = `[...document.querySelectorAll("#workers tr[data-url]")].map((tr) => ({
  role: tr.dataset.role, url: tr.dataset.url, state: tr.dataset.state,
  inFlight: Number(tr.querySelector('[data-field="inFlight"]').textContent),
  version: tr.querySelector('[data-field="version"]').textContent }))`;

const ROUTE_ROWS = `[...document.querySelectorAll("#routes tr")].filter((tr) => tr.children.length === 4).map((tr) => ({
  route: tr.querySelector('[data-field="route"]').textContent, outcome: tr.querySelector('[data-field="outcome"]').textContent,
  total: Number(tr.querySelector('[data-field="total"]').textContent) }))`;

describe("the dashboard in headless Chromium", () => {
  test("shows live workers and counters matching /cluster_info and /metrics, charts moving, a killed worker unhealthy, no console error", async () => {
    await using cluster = await startCluster({
      contexts: [{ prefillMs: 20 }, { prefillMs: 20 }],
      generations: [{ tokenMs: 15 }],
      config: { contextRouter: "round_robin", healthCheckIntervalMs: 100, healthCheckFailures: 2 },
    });
    // Traffic: four lanes of streamed and plain requests, now and then a bad one or one the worker fails.
    const traffic = new AbortController();
    const lane = async (n: number): Promise<void> => {
      for (let i = 0; !traffic.signal.aborted; i++) {
        const body =
          i % 7 === 3 ? { model: "m" } : chat(`${i % 11 === 5 ? "[[emu gen.reject=400]] " : ""}lane ${n} request ${i}`, i % 2 === 0);
        await (await cluster.post("/v1/chat/completions", body)).text();
      }
    };
    const lanes = [0, 1, 2, 3].map(lane);

    await using browser = await Chromium.launch();
    const problems: string[] = [];
    browser.onEvent((method, params) => {
      if (method === "Runtime.exceptionThrown") problems.push(`exception: ${JSON.stringify(params["exceptionDetails"])}`);
      if (method === "Runtime.consoleAPICalled" && (params["type"] === "error" || params["type"] === "warning"))
        problems.push(`console: ${JSON.stringify(params["args"])}`);
      const entry = params["entry"] as { level?: string; text?: string; url?: string } | undefined;
      if (method === "Log.entryAdded" && entry?.level === "error") problems.push(`log: ${entry.text} ${entry.url ?? ""}`);
    });
    const page = await browser.newPage();
    await Promise.all(["Runtime.enable", "Log.enable", "Page.enable"].map((method) => browser.send(method, {}, page)));
    await browser.send("Emulation.setDeviceMetricsOverride", { width: 1280, height: 1500, deviceScaleFactor: 1, mobile: false }, page);
    const loaded = browser.nextEvent("Page.loadEventFired", page);
    await browser.send("Page.navigate", { url: `${cluster.url}/dashboard` }, page);
    await loaded;
    await browser.evaluate(page, waitInPage(`Number(document.body.dataset.updates) >= 2`, 10_000));

    // A chart is redrawn with a newer point within 3 s.
    const lastAt = await browser.evaluate<string>(page, `document.getElementById("chart-outcomes").dataset.lastAt`);
    await browser.evaluate(
      page,
      waitInPage(`document.getElementById("chart-outcomes").dataset.lastAt !== ${JSON.stringify(lastAt)}`, 3000),
    );
    const drawn = await browser.evaluate<number>(
      page,
      `document.querySelector("#chart-outcomes path.o-ok").getAttribute("d").split("L").length`,
    );
    expect(drawn).toBeGreaterThan(1);

    // Quiet: the page's numbers, once it has the next snapshot, are the metrics' and /cluster_info's.
    traffic.abort();
    await Promise.all(lanes);
    await eventually(() => cluster.proxy.app.requests.active.size === 0);
    const seen = await browser.evaluate<number>(page, `Number(document.body.dataset.updates)`);
    await browser.evaluate(page, waitInPage(`Number(document.body.dataset.updates) >= ${seen + 2}`, 5000));
    const routes = await browser.evaluate<{ route: string; outcome: string; total: number }[]>(page, ROUTE_ROWS);
    const metrics = await (await fetch(`${cluster.url}/metrics`)).text();
    expect(routes.map((r) => r.outcome).toSorted()).toEqual(["ok", "rejected", "worker_error"]);
    for (const row of routes)
      expect(row.total).toBe(sample(metrics, "disagg_proxy_requests_total", { route: row.route, outcome: row.outcome }));
    expect(routes.find((r) => r.outcome === "ok")!.total).toBeGreaterThan(4);
    const info = (await (await fetch(`${cluster.url}/cluster_info`)).json()) as {
      workers: Record<string, { url: string; ready: boolean; in_flight: number; version: string | null }[]>;
    };
    const listed = Object.entries(info.workers).flatMap(([role, workers]) =>
      workers.map((w) => ({
        role,
        url: w.url,
        state: w.ready ? "healthy" : "unhealthy",
        inFlight: w.in_flight,
        version: w.version ?? "–",
      })),
    );
    expect(await browser.evaluate<PageWorker[]>(page, WORKER_ROWS)).toEqual(listed);
    const failures = await browser.evaluate<number>(page, `document.querySelectorAll('#failures td[data-field="outcome"]').length`);
    expect(failures).toBeGreaterThan(0);

    // A killed worker turns unhealthy on the page.
    const victim = cluster.contexts[1]!;
    await victim.stop();
    await browser.evaluate(
      page,
      waitInPage(`document.querySelector('#workers tr[data-url="${victim.url}"]')?.dataset.state === "unhealthy"`, 10_000),
    );

    // Readable on a phone: nothing wider than the screen but the tables' own scrolling.
    await browser.send("Emulation.setDeviceMetricsOverride", { width: 390, height: 844, deviceScaleFactor: 2, mobile: true }, page);
    expect(await browser.evaluate<boolean>(page, `document.documentElement.scrollWidth <= window.innerWidth`)).toBe(true);
    await browser.send("Emulation.setDeviceMetricsOverride", { width: 1280, height: 1000, deviceScaleFactor: 1, mobile: false }, page);

    const shot = await browser.send("Page.captureScreenshot", { format: "png" }, page);
    const path = process.env["DASHBOARD_SCREENSHOT"] ?? join(tmpdir(), "disagg-proxy-dashboard.png");
    writeFileSync(path, Buffer.from(String(shot["data"]), "base64"));
    expect(problems).toEqual([]);
  }, 90_000);

  test("with --protect-metrics the browser asks for the key once (Basic), and the live updates then flow", async () => {
    await using cluster = await startCluster({ config: { apiKeysFromEnv: "browser-key", protectMetrics: true } });
    await using browser = await Chromium.launch();
    const page = await browser.newPage();
    let asked = 0;
    const problems: string[] = [];
    // The user answering the browser's prompt: requests pass on, an auth challenge gets the key.
    browser.onEvent((method, params, sessionId) => {
      if (sessionId !== page) return;
      const requestId = params["requestId"];
      if (method === "Fetch.requestPaused") void browser.send("Fetch.continueRequest", { requestId }, page);
      if (method === "Fetch.authRequired") {
        asked++;
        const authChallengeResponse = { response: "ProvideCredentials", username: "ops", password: "browser-key" };
        void browser.send("Fetch.continueWithAuth", { requestId, authChallengeResponse }, page);
      }
      if (method === "Runtime.exceptionThrown") problems.push(JSON.stringify(params["exceptionDetails"]));
    });
    await browser.send("Runtime.enable", {}, page);
    await browser.send("Page.enable", {}, page);
    await browser.send("Fetch.enable", { patterns: [{ urlPattern: "*" }], handleAuthRequests: true }, page);
    const loaded = browser.nextEvent("Page.loadEventFired", page);
    await browser.send("Page.navigate", { url: `${cluster.url}/dashboard` }, page);
    await loaded;
    await browser.evaluate(page, waitInPage(`Number(document.body.dataset.updates) >= 2`, 10_000));
    expect(await browser.evaluate<number>(page, `document.querySelectorAll("#workers tr[data-url]").length`)).toBe(2);
    expect(asked).toBe(1);
    expect(problems).toEqual([]);
  }, 60_000);
});
