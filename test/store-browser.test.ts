/**
 * Issue #24, item 1, in a real browser: Debian's headless Chromium on the proxy's own host
 * opens a page from another origin that tries what the outside probe did — register its own
 * server as a context worker through the keyless HTTP cluster storage (fetch no-cors with a
 * text/plain body and with a type-less Blob), evict the real worker (`new Image().src =
 * /expire?ttl=-1`) — and a DNS-rebound name reads /cluster_info and the store. Every attempt
 * fails: the attacker's server never gets a prompt, the real worker keeps its registration.
 */

import { describe, expect, test } from "bun:test";
import { httpRegistrar } from "../src/discovery/index.ts";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { silentLogger } from "../src/observability/logger.ts";
import { Chromium } from "./support/chromium.ts";
import { eventually, startCluster } from "./support/cluster.ts";

const chat = { model: "m", messages: [{ role: "user", content: "hello" }], max_tokens: 4 };
const CLUSTER = "browser";
const PREFIX = `/trtllm-disagg/${CLUSTER}/workers/`;

/** The attacker's page: every request it makes is one a page may make without a CORS preflight. */
function attackPage(proxy: string, attacker: { host: string; port: number }, victimKey: string): string {
  const key = `${PREFIX}CONTEXT-attacker`;
  const item = JSON.stringify({
    key,
    value: JSON.stringify({ worker_id: "CONTEXT-attacker", host: attacker.host, port: attacker.port, role: 0 }),
    ttl: 3600,
    overwrite_if_exists: true,
  });
  return `<!doctype html><script>
    window.attack = (async () => {
      const proxy = ${JSON.stringify(proxy)};
      const item = ${JSON.stringify(item)};
      const image = (src) => new Promise((resolve) => { const img = new Image(); img.onload = img.onerror = () => resolve(src); img.src = src; });
      await fetch(proxy + "/set", { method: "POST", mode: "no-cors", body: item });
      await fetch(proxy + "/set", { method: "POST", mode: "no-cors", body: new Blob([item]) });
      await image(proxy + "/expire?key=" + encodeURIComponent(${JSON.stringify(victimKey)}) + "&ttl=-1");
      await image(proxy + "/delete?key=" + encodeURIComponent(${JSON.stringify(victimKey)}));
      let read = "refused";
      try { read = await (await fetch(proxy + "/get_prefix?key_prefix=/")).text(); } catch {}
      return read;
    })();
  </script>`;
}

describe("a web page from another origin, in headless Chromium", () => {
  test("cannot register a worker, evict one, or read the store; a DNS-rebound name gets 421; the real workers keep serving", async () => {
    await using cluster = await startCluster({
      contexts: [],
      generations: [],
      config: {
        discovery: {
          kind: "cluster",
          storage: "http",
          endpoint: "http://127.0.0.1:0",
          clusterName: CLUSTER,
          minimalContext: 1,
          minimalGeneration: 1,
          leaseTtlMs: 2000,
        },
        serverStartTimeoutMs: 50,
        healthCheckIntervalMs: 50,
      },
    });
    // Real workers heartbeat every 5 s (upstream's default interval): an eviction would show.
    const register = httpRegistrar({
      uri: cluster.url,
      clusterName: CLUSTER,
      heartbeatMs: 5000,
      ttlMs: 30_000,
      logger: silentLogger,
      retryMs: 100,
    });
    await using context = startEmulatedWorker({ role: "context", register });
    await using generation = startEmulatedWorker({ role: "generation", register });
    await using attacker = startEmulatedWorker({ role: "context" });
    await eventually(() => cluster.proxy.app.placement.pool.isReady(), 5000);
    const storedKeys = async (): Promise<string[]> =>
      Object.keys(
        ((await (await fetch(`${cluster.url}/get_prefix?key_prefix=${PREFIX}&keys_only=1`)).json()) as { result: Record<string, string> })
          .result,
      ).toSorted();
    const registered = await storedKeys();
    const victimKey = registered.find((key) => key.startsWith(`${PREFIX}CONTEXT-`))!;

    const page = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      fetch: () =>
        new Response(attackPage(cluster.url, { host: "127.0.0.1", port: attacker.port }, victimKey), {
          headers: { "content-type": "text/html" },
        }),
    });
    try {
      const proxyPort = new URL(cluster.url).port;
      await using browser = await Chromium.launch([`--host-resolver-rules=MAP attacker.test 127.0.0.1, MAP rebind.test 127.0.0.1`]);
      const tab = await browser.newPage();
      await browser.send("Page.enable", {}, tab);
      const loaded = browser.nextEvent("Page.loadEventFired", tab);
      await browser.send("Page.navigate", { url: `http://attacker.test:${page.port}/` }, tab);
      await loaded;
      // The cross-origin read is blocked by the browser (no CORS header) after the proxy refused it.
      expect(await browser.evaluate<string>(tab, "window.attack")).toBe("refused");

      // The store holds the real workers only, the victim's key unexpired.
      expect(await storedKeys()).toEqual(registered);
      expect(registered.length).toBe(2);
      expect(cluster.proxy.app.placement.pool.all("context").map((w) => w.origin)).toEqual([context.url]);
      const refusals = cluster.logs.filter((record) => record["msg"] === "cluster storage request refused");
      expect(refusals.length).toBeGreaterThan(0);
      expect(String(refusals[0]!["reason"])).toContain("is not this proxy's");

      // DNS rebinding: the attacker's name now points at the proxy; the page is "same-origin" with it.
      for (const path of ["/cluster_info", "/get_prefix?key_prefix=/", "/dashboard/data"]) {
        const navigated = browser.nextEvent("Page.loadEventFired", tab);
        await browser.send("Page.navigate", { url: `http://rebind.test:${proxyPort}${path}` }, tab);
        await navigated;
        const text = await browser.evaluate<string>(tab, "document.body.innerText");
        expect([path, text.includes("This proxy does not answer to Host"), text.includes(`rebind.test:${proxyPort}`)]).toEqual([
          path,
          true,
          true,
        ]);
      }

      // The next prompts reach the real workers, none the attacker's server.
      for (let i = 0; i < 3; i++) expect((await cluster.post("/v1/chat/completions", chat)).status).toBe(200);
      expect(attacker.requests.length).toBe(0);
      expect(context.requests.filter((r) => r.phase === "context").length).toBe(3);
      expect(generation.requests.filter((r) => r.phase === "generation").length).toBe(3);
    } finally {
      await page.stop(true);
    }
  }, 60_000);
});
