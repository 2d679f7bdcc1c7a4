/**
 * disagg_cluster with an http:// cluster_uri: the proxy serves upstream's HTTP cluster storage
 * on its own port (tensorrt_llm/serve/cluster_storage.py @ 057d4a79) and workers register in it
 * as `trtllm-serve serve --disagg_cluster_uri http://proxy:port` does
 * (tensorrt_llm/serve/disagg_auto_scaling.py @ 00184339).
 */

import { afterAll, describe, expect, test } from "bun:test";
import { join } from "node:path";
import type { ProxyConfig } from "../src/config/types.ts";
import { httpRegistrar } from "../src/discovery/index.ts";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { silentLogger } from "../src/observability/logger.ts";
import { eventually, startCluster } from "./support/cluster.ts";
import { freePort } from "./support/etcd.ts";

const MAIN = join(import.meta.dir, "..", "src", "main.ts");
const chat = { model: "m", messages: [{ role: "user", content: "hello" }], max_tokens: 4 };
const children: Bun.Subprocess[] = [];
const JSON_TYPE = { "content-type": "application/json" };

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
});

function httpCluster(clusterName: string, port = 0, extra: Partial<ProxyConfig> = {}): ReturnType<typeof startCluster> {
  return startCluster({
    contexts: [],
    generations: [],
    config: {
      port,
      discovery: {
        kind: "cluster",
        storage: "http",
        endpoint: `http://127.0.0.1:${port}`,
        clusterName,
        minimalContext: 1,
        minimalGeneration: 1,
        leaseTtlMs: 2000,
      },
      serverStartTimeoutMs: 50,
      healthCheckIntervalMs: 50,
      ...extra,
    },
  });
}

/** Registration as upstream's worker does it: heartbeat 0.2 s, inactive_timeout_sec 1. */
const register = (url: string, clusterName: string) =>
  httpRegistrar({ uri: url, clusterName, heartbeatMs: 200, ttlMs: 1000, logger: silentLogger, retryMs: 100 });

interface ClusterInfo {
  is_ready: boolean;
  server_lists: { context: string[]; generation: string[] };
  current_workers: {
    context_servers: { worker_id: string; host: string; port: number; role: number }[];
    generation_servers: { worker_id: string; host: string; port: number; role: number }[];
  };
  minimal_instances: { context_servers: number; generation_servers: number };
}

async function clusterInfo(url: string): Promise<ClusterInfo> {
  return (await (await fetch(`${url}/cluster_info`)).json()) as ClusterInfo;
}

describe("the proxy's HTTP cluster storage", () => {
  test("answers upstream's five routes with {result} and upstream's status codes", async () => {
    await using cluster = await httpCluster("routes");
    const call = async (path: string, init?: RequestInit): Promise<[number, unknown]> => {
      const response = await fetch(`${cluster.url}${path}`, init);
      return [response.status, ((await response.json()) as { result?: unknown }).result];
    };
    const set = (body: unknown): Promise<[number, unknown]> =>
      call("/set", { method: "POST", headers: { "content-type": "application/json" }, body: JSON.stringify(body) });
    expect(await set({ key: "/a/1", value: "one" })).toEqual([200, true]);
    expect(await set({ key: "/a/1", value: "again" })).toEqual([400, false]);
    expect(await set({ key: "/a/1", value: "two", overwrite_if_exists: true })).toEqual([200, true]);
    expect(await set({ key: "/a/2", value: "x", ttl: 60 })).toEqual([200, true]);
    expect(await call("/get?key=/a/1")).toEqual([200, "two"]);
    expect(await call("/get?key=/missing")).toEqual([400, null]);
    expect(await call("/expire?key=/a/2&ttl=30")).toEqual([200, true]);
    expect(await call("/expire?key=/missing&ttl=30")).toEqual([400, false]);
    expect(await call("/get_prefix?key_prefix=/a/&keys_only=0")).toEqual([200, { "/a/1": "two", "/a/2": "x" }]);
    expect(await call("/get_prefix?key_prefix=/a/&keys_only=1")).toEqual([200, { "/a/1": "", "/a/2": "" }]);
    // A valid empty result is a 200, as upstream since #19427 (test_cluster_storage_http_empty_results.py @ 85e2de13).
    expect(await call("/get_prefix?key_prefix=/none/")).toEqual([200, {}]);
    expect(await set({ key: "/empty", value: "" })).toEqual([200, true]);
    expect(await call("/get?key=/empty")).toEqual([200, ""]);
    expect(await call("/delete?key=/a/1", { method: "DELETE" })).toEqual([200, true]);
    expect(await call("/delete?key=/a/1", { method: "DELETE" })).toEqual([400, false]);
    expect((await fetch(`${cluster.url}/get`)).status).toBe(422);
    expect((await fetch(`${cluster.url}/expire?key=/a/2&ttl=soon`)).status).toBe(422);
    expect((await set({ value: "no key" }))[0]).toBe(422);
    // Bounded: a key over 1 KiB, a value over 64 KiB, a body over their sum.
    expect((await set({ key: "k".repeat(1025), value: "v" }))[0]).toBe(413);
    expect((await set({ key: "/big", value: "v".repeat(70 * 1024) }))[0]).toBe(413);
  });

  test("is not served without an http cluster_uri", async () => {
    await using cluster = await startCluster();
    expect((await fetch(`${cluster.url}/get?key=/x`)).status).toBe(404);
  });

  test("workers join within one heartbeat, show under current_workers, serve, and leave when they deregister", async () => {
    await using cluster = await httpCluster("join");
    expect((await fetch(`${cluster.url}/health`)).status).toBe(503);
    // While waiting, start-up says what is missing.
    expect(
      cluster.logs.some(
        (record) => record["msg"] === "waiting for workers to register: need 1 context worker, have 0; need 1 generation worker, have 0",
      ),
    ).toBe(true);
    expect(
      cluster.logs.some((record) =>
        String(record["msg"]).startsWith(
          "serving the HTTP cluster storage (disagg_cluster.cluster_uri): registrations accepted from loopback only",
        ),
      ),
    ).toBe(true);
    await using context = startEmulatedWorker({ role: "context", register: register(cluster.url, "join") });
    const generation = startEmulatedWorker({ role: "generation", register: register(cluster.url, "join") });
    await eventually(() => cluster.proxy.app.placement.pool.isReady(), 5000);
    const info = await clusterInfo(cluster.url);
    expect(info.is_ready).toBe(true);
    expect(info.server_lists).toEqual({ context: [context.url], generation: [generation.url] });
    expect(info.current_workers.context_servers).toEqual([
      { worker_id: expect.stringMatching(/^CONTEXT-127\.0\.0\.1:\d+-\d+-\d+-\d{3}$/), host: "127.0.0.1", port: context.port, role: 0 },
    ]);
    expect(info.current_workers.generation_servers.map((w) => w.role)).toEqual([1]);
    expect(info.minimal_instances).toEqual({ context_servers: 1, generation_servers: 1 });
    expect((await cluster.post("/v1/chat/completions", chat)).status).toBe(200);
    await generation.stop();
    await eventually(() => cluster.proxy.app.placement.pool.all("generation").length === 0, 5000);
    expect((await clusterInfo(cluster.url)).current_workers.generation_servers).toEqual([]);
    expect((await fetch(`${cluster.url}/health`)).status).toBe(503);
  }, 20_000);

  test("a worker killed without deregistering is dropped within inactive_timeout_sec, no later than a key set with that TTL when it died", async () => {
    await using cluster = await httpCluster("killed");
    const worker = Bun.spawn(
      [
        process.execPath,
        MAIN,
        "worker",
        "--role",
        "generation",
        "--port",
        "0",
        "--disagg_cluster_uri",
        cluster.url,
        "--cluster-name",
        "killed",
        "--heartbeat-interval",
        "0.2",
        "--inactive-timeout",
        "1",
      ],
      { stdout: "ignore", stderr: "ignore" },
    );
    children.push(worker);
    await eventually(() => cluster.proxy.app.placement.pool.all("generation").length === 1, 10_000);
    const killed = cluster.proxy.app.placement.pool.all("generation")[0]!.origin;
    worker.kill("SIGKILL");
    // A control registration with the same inactive_timeout_sec, made after the worker's last heartbeat.
    await using control = startEmulatedWorker({ role: "generation" });
    const value = JSON.stringify({ worker_id: "control", host: "127.0.0.1", port: control.port, role: 1 });
    const set = await fetch(`${cluster.url}/set`, {
      method: "POST",
      headers: JSON_TYPE,
      body: JSON.stringify({ key: "/trtllm-disagg/killed/workers/control", value, ttl: 1 }),
    });
    expect(set.status).toBe(200);
    const origins = (): string[] => cluster.proxy.app.placement.pool.all("generation").map((w) => w.origin);
    await eventually(() => origins().includes(control.url), 5000);
    // Expiry is the only way out for both: the killed worker leaves no later than the control does.
    await eventually(() => !origins().includes(control.url), 10_000);
    expect(origins()).not.toContain(killed);
    expect(cluster.logs.some((record) => record["msg"] === "worker left" && record["worker"] === killed)).toBe(true);
  }, 30_000);

  test("workers register again after the proxy restarts on the same port", async () => {
    const port = freePort();
    let cluster = await httpCluster("restart", port);
    await using context = startEmulatedWorker({ role: "context", register: register(`http://127.0.0.1:${port}`, "restart") });
    await using generation = startEmulatedWorker({ role: "generation", register: register(`http://127.0.0.1:${port}`, "restart") });
    await eventually(() => cluster.proxy.app.placement.pool.isReady(), 5000);
    await cluster.proxy.stop();
    cluster = await httpCluster("restart", port);
    try {
      // The new proxy's store is empty: each worker's heartbeat fails, and it registers again.
      await eventually(() => cluster.proxy.app.placement.pool.isReady(), 5000);
      expect((await clusterInfo(cluster.url)).server_lists).toEqual({ context: [context.url], generation: [generation.url] });
      expect((await cluster.post("/v1/chat/completions", chat)).status).toBe(200);
    } finally {
      await cluster.proxy.stop();
    }
  }, 20_000);

  test("a streamed request survives its generation worker leaving the cluster", async () => {
    await using cluster = await httpCluster("leave");
    await using context = startEmulatedWorker({ role: "context", register: register(cluster.url, "leave") });
    await using leaving = startEmulatedWorker({ role: "generation", register: register(cluster.url, "leave"), tokenMs: 40 });
    await eventually(() => cluster.proxy.app.placement.pool.isReady(), 5000);
    const response = await cluster.post("/v1/chat/completions", { ...chat, max_tokens: 20, stream: true });
    expect(response.status).toBe(200);
    const body = response.text();
    await eventually(() => leaving.running() === 1, 5000);
    await leaving.deregister();
    await eventually(() => cluster.proxy.app.placement.pool.all("generation").length === 0, 5000);
    const text = await body;
    expect(text.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(context.requests.filter((r) => r.phase === "context").length).toBe(1);
  }, 20_000);

  test("an emulated worker listening on 0.0.0.0 registers that host, as trtllm-serve does, and is reached over loopback", async () => {
    await using cluster = await httpCluster("listen-wildcard");
    await using context = startEmulatedWorker({ role: "context", host: "0.0.0.0", register: register(cluster.url, "listen-wildcard") });
    await using generation = startEmulatedWorker({ role: "generation", register: register(cluster.url, "listen-wildcard") });
    await eventually(() => cluster.proxy.app.placement.pool.isReady(), 5000);
    const info = await clusterInfo(cluster.url);
    expect(info.current_workers.context_servers[0]?.host).toBe("0.0.0.0");
    expect(info.server_lists.context).toEqual([`http://127.0.0.1:${context.port}`]);
    expect((await cluster.post("/v1/chat/completions", chat)).status).toBe(200);
    expect(generation.url.length).toBeGreaterThan(0);
  }, 20_000);

  test("a worker registering host 0.0.0.0 is reached at the address its registration came from", async () => {
    await using cluster = await httpCluster("wildcard");
    await using context = startEmulatedWorker({ role: "context", register: register(cluster.url, "wildcard") });
    await using generation = startEmulatedWorker({ role: "generation" });
    const value = JSON.stringify({ worker_id: "GENERATION-0.0.0.0", host: "0.0.0.0", port: generation.port, role: 1 });
    const set = await fetch(`${cluster.url}/set`, {
      method: "POST",
      headers: JSON_TYPE,
      body: JSON.stringify({ key: "/trtllm-disagg/wildcard/workers/GENERATION-0.0.0.0", value, ttl: 30 }),
    });
    expect(set.status).toBe(200);
    await eventually(() => cluster.proxy.app.placement.pool.isReady(), 5000);
    expect((await clusterInfo(cluster.url)).server_lists.generation).toEqual([`http://127.0.0.1:${generation.port}`]);
    expect((await clusterInfo(cluster.url)).current_workers.generation_servers[0]?.host).toBe("0.0.0.0");
    expect((await cluster.post("/v1/chat/completions", chat)).status).toBe(200);
    expect(context.url.length).toBeGreaterThan(0);
  }, 20_000);

  test("with a cluster key, a registration without the Bearer token is refused with 403 and a log line naming its address", async () => {
    await using cluster = await httpCluster("keyed", 0, { clusterKey: "s3cret" });
    const item = JSON.stringify({ key: "/trtllm-disagg/keyed/workers/x", value: "{}" });
    const refused = await fetch(`${cluster.url}/set`, { method: "POST", headers: JSON_TYPE, body: item });
    expect(refused.status).toBe(403);
    expect(cluster.logs.find((record) => record["msg"] === "cluster storage request refused")).toMatchObject({
      path: "/set",
      from: expect.stringContaining("127.0.0.1"),
      reason: "no Bearer token",
    });
    const wrong = await fetch(`${cluster.url}/get_prefix?key_prefix=/`, { headers: { authorization: "Bearer nope" } });
    expect([wrong.status, await wrong.json()]).toEqual([403, { detail: "Invalid API key" }]);
    const accepted = await fetch(`${cluster.url}/set`, {
      method: "POST",
      body: item,
      headers: { ...JSON_TYPE, authorization: "Bearer s3cret" },
    });
    expect(accepted.status).toBe(200);
    // The emulated worker sends the key as upstream's client does.
    await using worker = startEmulatedWorker({
      role: "generation",
      register: httpRegistrar({
        uri: cluster.url,
        clusterName: "keyed",
        heartbeatMs: 200,
        ttlMs: 1000,
        key: "s3cret",
        logger: silentLogger,
      }),
    });
    await eventually(() => cluster.proxy.app.placement.pool.all("generation").length === 1, 5000);
    expect(worker.url.length).toBeGreaterThan(0);
  }, 20_000);
});

describe("the HTTP cluster storage refuses what a web page can send (issue #24)", () => {
  const item = JSON.stringify({ key: "/trtllm-disagg/web/workers/x", value: "{}", ttl: 30 });

  test("a /set body that is not declared JSON is a 415 and stores nothing; upstream's JSON registration and type-less DELETE pass", async () => {
    await using cluster = await httpCluster("types");
    // What a page can send without a CORS preflight: text/plain, a form type, or a Blob with no type.
    for (const headers of [{ "content-type": "text/plain;charset=UTF-8" }, { "content-type": "application/x-www-form-urlencoded" }, {}]) {
      const refused = await fetch(`${cluster.url}/set`, { method: "POST", headers, body: item });
      expect([refused.status, await refused.json()]).toEqual([
        415,
        { detail: "Unsupported Media Type: the body must be application/json" },
      ]);
    }
    expect((await fetch(`${cluster.url}/get_prefix?key_prefix=/trtllm-disagg/web/`)).status).toBe(200);
    expect(await (await fetch(`${cluster.url}/get_prefix?key_prefix=/trtllm-disagg/web/`)).json()).toEqual({ result: {} });
    expect(cluster.logs.find((record) => record["msg"] === "cluster storage request refused")).toMatchObject({
      path: "/set",
      reason: "Content-Type text/plain;charset=UTF-8",
    });
    expect(
      (await fetch(`${cluster.url}/set`, { method: "POST", headers: { "content-type": "application/json; charset=utf-8" }, body: item }))
        .status,
    ).toBe(200);
    // Upstream's client deletes with the key in the query, no body and no Content-Type.
    expect((await fetch(`${cluster.url}/delete?key=/trtllm-disagg/web/workers/x`, { method: "DELETE" })).status).toBe(200);
    expect(
      (
        await fetch(`${cluster.url}/delete?key=/trtllm-disagg/web/workers/x`, {
          method: "DELETE",
          headers: { "content-type": "text/plain" },
          body: "x",
        })
      ).status,
    ).toBe(415);
  });

  test("a request carrying another origin's Origin or a cross-site Sec-Fetch-Site is a 403 and a log line; the proxy's own origin passes", async () => {
    await using cluster = await httpCluster("origins");
    const json = { "content-type": "application/json" };
    const refused = await fetch(`${cluster.url}/set`, {
      method: "POST",
      headers: { ...json, origin: "http://attacker.example" },
      body: item,
    });
    expect([refused.status, await refused.json()]).toEqual([403, { detail: "Forbidden: a cross-origin request (web page)" }]);
    expect(cluster.logs.find((record) => record["msg"] === "cluster storage request refused")).toMatchObject({
      path: "/set",
      reason: "Origin http://attacker.example is not this proxy's",
    });
    // An image or a link from another site: no Origin, but the browser says where it came from.
    for (const site of ["cross-site", "same-site"]) {
      expect(
        (await fetch(`${cluster.url}/expire?key=/trtllm-disagg/web/workers/x&ttl=-1`, { headers: { "sec-fetch-site": site } })).status,
      ).toBe(403);
    }
    expect((await fetch(`${cluster.url}/get_prefix?key_prefix=/`, { headers: { origin: "null" } })).status).toBe(403);
    // A browser from before 2023 sends no Fetch Metadata with an image's GET, but its page's address.
    const fromOldBrowser = await fetch(`${cluster.url}/expire?key=/trtllm-disagg/web/workers/x&ttl=-1`, {
      headers: { referer: "http://attacker.example/page.html" },
    });
    expect(fromOldBrowser.status).toBe(403);
    expect(
      (
        await fetch(`${cluster.url}/set`, {
          method: "POST",
          headers: { ...json, origin: cluster.url, "sec-fetch-site": "same-origin" },
          body: item,
        })
      ).status,
    ).toBe(200);
    expect((await fetch(`${cluster.url}/get?key=/trtllm-disagg/web/workers/x`, { headers: { "sec-fetch-site": "none" } })).status).toBe(
      200,
    );
  });

  test("a Host that names no name of this proxy is a 421 on the store, /cluster_info and the dashboard; model routes take any Host", async () => {
    await using cluster = await httpCluster("hosts", 0, { allowedHosts: ["proxy.internal"] });
    const port = new URL(cluster.url).port;
    const get = (path: string, host: string): Promise<Response> => fetch(`${cluster.url}${path}`, { headers: { host } });
    for (const path of ["/get_prefix?key_prefix=/", "/cluster_info", "/dashboard/data"]) {
      const rebound = await get(path, `rebind.attacker.example:${port}`);
      expect(rebound.status).toBe(421);
      await rebound.body?.cancel();
      for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `PROXY.internal:${port}`, "proxy.internal."]) {
        const answered = await get(path, host);
        expect([path, host, answered.status]).toEqual([path, host, 200]);
        await answered.body?.cancel();
      }
    }
    expect(await (await get("/get_prefix?key_prefix=/", "rebind.attacker.example")).json()).toEqual({
      detail: expect.stringContaining('This proxy does not answer to Host "rebind.attacker.example"'),
    });
    // The name in disagg_cluster.cluster_uri is the one workers register at: it is accepted too.
    await using named = await startCluster({
      contexts: [],
      generations: [],
      config: {
        discovery: {
          kind: "cluster",
          storage: "http",
          endpoint: "http://registry.cluster.test:8000",
          clusterName: "hosts",
          minimalContext: 1,
          minimalGeneration: 1,
          leaseTtlMs: 2000,
        },
        serverStartTimeoutMs: 50,
      },
    });
    expect((await fetch(`${named.url}/get_prefix?key_prefix=/`, { headers: { host: "registry.cluster.test:8000" } })).status).toBe(200);
    expect((await fetch(`${named.url}/get_prefix?key_prefix=/`, { headers: { host: "proxy.internal:8000" } })).status).toBe(421);
    const model = await fetch(`${cluster.url}/v1/chat/completions`, {
      method: "POST",
      headers: { host: "anything.example", "content-type": "application/json" },
      body: JSON.stringify(chat),
    });
    expect(model.status).toBe(503);
    expect(((await model.json()) as { code?: string }).code).not.toBe("MISDIRECTED");
  });
});

describe("registrations are bounded (issue #24)", () => {
  test("a registration naming a link-local or metadata address, or the proxy itself, never joins; a real worker does", async () => {
    await using cluster = await httpCluster("addresses");
    const port = Number(new URL(cluster.url).port);
    const set = (id: string, host: string, workerPort: number, role: number): Promise<Response> =>
      fetch(`${cluster.url}/set`, {
        method: "POST",
        headers: JSON_TYPE,
        body: JSON.stringify({
          key: `/trtllm-disagg/addresses/workers/${id}`,
          value: JSON.stringify({ worker_id: id, host, port: workerPort, role }),
          ttl: 30,
        }),
      });
    for (const [id, host, workerPort] of [
      ["metadata", "169.254.169.254", 80],
      ["metadata-name", "metadata.google.internal", 80],
      ["link-local-v6", "fe80::1", 8001],
      ["itself", "127.0.0.1", port],
      ["itself-by-name", "localhost", port],
    ] as const) {
      expect((await set(id, host, workerPort, 0)).status).toBe(200);
    }
    await using context = startEmulatedWorker({ role: "context", register: register(cluster.url, "addresses") });
    await using generation = startEmulatedWorker({ role: "generation", register: register(cluster.url, "addresses") });
    await eventually(() => cluster.proxy.app.placement.pool.isReady(), 5000);
    expect(cluster.proxy.app.placement.pool.all("context").map((w) => w.origin)).toEqual([context.url]);
    const refused = cluster.logs
      .filter((record) => record["msg"] === "discovered worker refused")
      .map((record) => [record["worker"], record["reason"]]);
    expect(refused).toEqual([
      ["http://169.254.169.254:80", "a link-local or metadata address (--allow-link-local-workers allows it)"],
      ["http://metadata.google.internal:80", "a cloud metadata name (--allow-link-local-workers allows it)"],
      ["http://[fe80::1]:8001", "a link-local or metadata address (--allow-link-local-workers allows it)"],
      [`http://127.0.0.1:${port}`, "the proxy's own address (requests would loop)"],
      [`http://localhost:${port}`, "the proxy's own address (requests would loop)"],
    ]);
    expect((await cluster.post("/v1/chat/completions", chat)).status).toBe(200);
    expect(generation.url.length).toBeGreaterThan(0);
  }, 20_000);

  test("the store is bounded in bytes: full, it refuses with 507 saying so and logs it, and get_prefix answers at most its bytes", async () => {
    await using cluster = await httpCluster("full");
    const value = "v".repeat(64 * 1024 - 64);
    let status = 200;
    let sets = 0;
    let refusal: unknown;
    while (status === 200 && sets < 1000) {
      const response = await fetch(`${cluster.url}/set`, {
        method: "POST",
        headers: JSON_TYPE,
        body: JSON.stringify({ key: `/fill/${sets++}`, value }),
      });
      status = response.status;
      refusal = await response.json();
    }
    expect(status).toBe(507);
    // 8 MiB of 64 KiB values: ~128 keys, not the 10,000 (655 MB) a key count alone allowed.
    expect(sets).toBeLessThan(140);
    expect(refusal).toEqual({
      detail: expect.stringMatching(
        /^the cluster storage is full after dropping its expired keys: \d+ keys, \d+ bytes \(at most 10000 keys, 8388608 bytes\)$/,
      ),
    });
    expect(cluster.logs.some((record) => record["msg"] === "cluster storage full: registration refused")).toBe(true);
    const listed = await (await fetch(`${cluster.url}/get_prefix?key_prefix=/`)).arrayBuffer();
    expect(listed.byteLength).toBeLessThan(8 * 1024 * 1024 + 64);
    // A deleted key frees its room.
    expect((await fetch(`${cluster.url}/delete?key=/fill/0`, { method: "DELETE" })).status).toBe(200);
    expect(
      (await fetch(`${cluster.url}/set`, { method: "POST", headers: JSON_TYPE, body: JSON.stringify({ key: "/fill/again", value }) }))
        .status,
    ).toBe(200);
  }, 30_000);
});

describe("workers register and heartbeat as before (issue #24)", () => {
  test("a registered worker's heartbeats (GET /expire, no Origin, no body) keep it past many TTLs, and its DELETE removes it", async () => {
    await using cluster = await httpCluster("heartbeat");
    await using context = startEmulatedWorker({ role: "context", register: register(cluster.url, "heartbeat") });
    await using generation = startEmulatedWorker({ role: "generation", register: register(cluster.url, "heartbeat") });
    await eventually(() => cluster.proxy.app.placement.pool.isReady(), 5000);
    const store = cluster.proxy.app.clusterStorage!.store;
    const expiry = (): number => Math.min(...store.items("/trtllm-disagg/heartbeat/workers/").map((item) => item.expiresAt ?? 0));
    const first = expiry();
    // inactive_timeout_sec is 1 s: both keys refreshed past three of their TTLs, the workers never left.
    await eventually(() => expiry() > first + 3000, 10_000);
    expect(cluster.logs.filter((record) => record["msg"] === "worker left")).toEqual([]);
    expect(cluster.logs.filter((record) => record["msg"] === "cluster storage request refused")).toEqual([]);
    expect((await cluster.post("/v1/chat/completions", chat)).status).toBe(200);
    await context.deregister();
    await eventually(() => cluster.proxy.app.placement.pool.all("context").length === 0, 5000);
    expect(generation.url.length).toBeGreaterThan(0);
  }, 20_000);
});
