/**
 * `disagg-proxy coordinator` over loopback: upstream's serving-process requests answered,
 * per-worker limits exact across concurrent clients, leases that expire, KV events read by the
 * coordinator alone. Workers are emulated on port 0.
 */

import { afterEach, describe, expect, test } from "bun:test";
import { fullBlockHashes } from "../src/emulator/kv/kv-block-hash.ts";
import { isMsgpackMap, type MsgpackValue } from "../src/json/msgpack-read.ts";
import { encodeFinishRequest, encodeSelectRequest, TOKEN_HASH_ALGO, type SelectRequest } from "../src/routing/coordinator-wire.ts";
import { DEFAULTS } from "../src/config/types.ts";
import { startCoordinator } from "../src/coordinator/run.ts";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { memoryLogger } from "../src/observability/logger.ts";
import { bytes, call, inFlight, nameOf, running, select, setup, stopStarted, text } from "./support/coordinator.ts";
import { eventually } from "./support/wait.ts";

afterEach(stopStarted);

describe("the coordinator answers upstream's serving processes", () => {
  test("the e2e test's generation placement (conversation conv-e2e, msgpack) is answered with host:port, info and the req_id, sticks, and finishes", async () => {
    const { url, contexts, generations, logs } = await setup();
    // tests/unittest/disaggregated/test_coordinator_e2e.py @ 2713ff6b: X-Session-ID conv-e2e on a conversation gen router;
    // router.py CoordinatorDelegatingRouter [id 54957247436] posts these bytes (Python msgpack, use_bin_type=True).
    const upstreamSelect = bytes(
      "84 a4 726f6c65 aa 67656e65726174696f6e",
      "ab 726f7574696e675f6b6579 a8 636f6e762d653265",
      "a6 7265715f6964 cf 000001000000002a",
      "ae 6578636c7564655f736572766572 af 3132372e302e302e313a3138303031",
    );
    const first = await call(url, "/select", upstreamSelect);
    expect(first.status).toBe(200);
    expect(first.type).toBe("application/msgpack");
    expect(generations.map(nameOf)).toContain(text(first.body["server"]));
    // Upstream's routers answer the worker's GET /server_info there (router.py _route: self._server_info.get(server, {})).
    expect(first.body["info"]).toMatchObject({ server_info: { role: "generation", model: "emulated-model" } });
    expect(first.body["req_id"]).toBe((1n << 40n) + 42n);
    expect(logs.find((line) => line["msg"] === "coordinator placed")).toMatchObject({
      role: "generation",
      req_id: String((1n << 40n) + 42n),
      server: first.body["server"],
    });
    // test_coordinator_worker.py @ 82750ef6: repeated requests of one conversation land on the same worker.
    for (let i = 1n; i <= 3n; i++) {
      const again = await select(url, {
        role: "generation",
        routingKey: { kind: "conversation", id: "conv-e2e" },
        reqId: (1n << 40n) + 42n + i,
        excludeServer: undefined,
      });
      expect(again.body["server"]).toBe(first.body["server"]);
    }
    expect((await call(url, "/cluster_info")).body["leases"]).toBe(4n);
    // router.py _finish_async: {role, req_id, success}, role as the client names it.
    const finished = await call(url, "/finish", bytes("83 a4 726f6c65 a3 67656e a6 7265715f6964 cf 000001000000002a a7 73756363657373 c3"));
    expect(finished).toEqual({ status: 200, type: "application/msgpack", body: {} });
    expect((await call(url, "/cluster_info")).body["leases"]).toBe(3n);
    // Ours beside upstream's API: the placements in Prometheus text.
    const metrics = await (await fetch(`${url}/metrics`)).text();
    expect(metrics).toContain('disagg_proxy_coordinator_placements_total{role="generation",status="200"} 4');
    expect(metrics).toContain('disagg_proxy_coordinator_finishes_total{role="generation",success="true",known="true"} 1');
    expect(metrics).toContain("disagg_proxy_coordinator_leases 3");
    expect(metrics).toMatch(/disagg_proxy_coordinator_worker_in_flight\{role="generation",worker="http:\/\/[^"]+"\} 3/);
    // A generation_first serving process sends the context worker's disaggregated_params to generation
    // (test_openai_disagg_service.py reads info["server_info"]["disaggregated_params"] of the context placement).
    const contextPlaced = await select(url, { role: "context", routingKey: { kind: "none" }, reqId: 7n, excludeServer: undefined });
    expect(contextPlaced.body["info"]).toMatchObject({
      server_info: { disaggregated_params: { ctx_info_endpoint: contexts.map((worker) => worker.url) } },
    });
  });

  test("cluster_info, health and version answer as upstream's client reads them", async () => {
    const { url, contexts, generations } = await setup({ config: { contextRouter: "round_robin", generationRouter: "kv_cache_aware" } });
    const info = (await call(url, "/cluster_info")).body;
    expect(info["is_ready"]).toBe(true);
    expect(info["server_lists"]).toEqual({ context: contexts.map(nameOf), generation: generations.map(nameOf) });
    // Only the stateful role has a key encoding; round_robin places in the serving process.
    expect(info["routing_key_configs"]).toEqual({
      generation: { tokens_per_block: 32n, kv_cache_hash_algo: "v1_block_key", router_type: "kv_cache_aware" },
    });
    expect((await fetch(`${url}/health`)).status).toBe(200);
    expect((await call(url, "/version")).body).toEqual({ version: "test" });
  });

  test.each([
    ["a JSON body", new TextEncoder().encode('{"role":"gen","routing_key":null}'), "invalid MessagePack body"],
    [
      "a float req_id",
      bytes("83 a4 726f6c65 a3 67656e ab 726f7574696e675f6b6579 c0 a6 7265715f6964 cb 3ff0000000000000"),
      "req_id must be an integer",
    ],
    ["an unknown role", bytes("82 a4 726f6c65 a6 6465636f6465 ab 726f7574696e675f6b6579 c0"), "invalid role: decode"],
  ])("%s gets a 400 with upstream's error text, is logged and places nothing", async (_name, body, error) => {
    const { url, logs } = await setup();
    const answer = await call(url, "/select", body);
    expect(answer.status).toBe(400);
    expect(text(answer.body["error"])).toContain(error);
    expect(logs.some((line) => line["msg"] === "coordinator request refused")).toBe(true);
    expect((await call(url, "/cluster_info")).body["leases"]).toBe(0n);
  });

  test("exclude_server keeps the paired leg off its own worker; an unknown path is FastAPI's 404; a web page's POST is refused", async () => {
    const shared = startEmulatedWorker({ role: "mixed" });
    const other = startEmulatedWorker({ role: "generation" });
    const logger = memoryLogger();
    const coordinator = startCoordinator(
      {
        ...DEFAULTS,
        host: "127.0.0.1",
        port: 0,
        contextServers: [shared.url],
        generationServers: [shared.url, other.url],
        configFile: undefined,
        nodeId: 1,
      },
      { port: 0, reservationTimeoutMs: 180_000 },
      logger,
      "test",
    );
    running.push(async () => {
      await coordinator.stop();
      await Promise.all([shared.stop(), other.stop()]);
    });
    await coordinator.waitForWorkers();
    const url = coordinator.url.origin;
    for (let i = 0n; i < 4n; i++) {
      const placed = await select(url, {
        role: "generation",
        routingKey: { kind: "none" },
        reqId: 100n + i,
        excludeServer: nameOf(shared),
      });
      expect(placed.body["server"]).toBe(nameOf(other));
    }
    expect((await fetch(`${url}/nope`)).status).toBe(404);
    // A page elsewhere cannot place or finish through a visitor's browser.
    const fromPage = await fetch(`${url}/select`, {
      method: "POST",
      headers: { "content-type": "text/plain", origin: "http://evil.example", "sec-fetch-site": "cross-site" },
      body: encodeSelectRequest({ role: "generation", routingKey: { kind: "none" }, reqId: 200n, excludeServer: undefined }),
    });
    expect(fromPage.status).toBe(403);
    expect((await fetch(`${url}/select`)).status).toBe(405);
  });
});

describe("the coordinator holds every placement of many serving processes in one view", () => {
  test("per-worker limits hold exactly across 1,000 placements from three concurrent clients", async () => {
    const limit = 3;
    const { url, generations } = await setup({ generations: 3, config: { maxInflightPerWorker: limit, generationRouter: "conversation" } });
    const held = new Map<string, number>();
    let peak = 0;
    const progress = { placed: 0 };
    let refused = 0;
    let next = 1n << 40n;
    // Three serving processes, each with four requests in flight at once.
    const client = async (index: number): Promise<void> => {
      const loops = Array.from({ length: 4 }, async () => {
        while (progress.placed < 1000) {
          const reqId = next++;
          const answer = await select(url, {
            role: "generation",
            routingKey: { kind: "conversation", id: `client-${index}-${reqId % 7n}` },
            reqId,
            excludeServer: undefined,
          });
          if (answer.status === 429) {
            refused++;
            continue;
          }
          expect(answer.status).toBe(200);
          progress.placed++;
          const server = text(answer.body["server"]);
          held.set(server, (held.get(server) ?? 0) + 1);
          peak = Math.max(peak, ...held.values());
          await Bun.sleep(Math.random() * 2);
          held.set(server, (held.get(server) ?? 1) - 1);
          await call(url, "/finish", encodeFinishRequest({ role: "generation", reqId, success: true }));
        }
      });
      await Promise.all(loops);
    };
    const sampled: number[] = [];
    const sampling = (async () => {
      while (progress.placed < 1000) {
        sampled.push(...inFlight((await call(url, "/cluster_info")).body, "generation").values());
        await Bun.sleep(1);
      }
    })();
    await Promise.all([client(0), client(1), client(2), sampling]);
    expect(progress.placed).toBeGreaterThanOrEqual(1000);
    // Twelve requests at once on nine slots: some were refused, and no worker ever held more than its limit.
    expect(refused).toBeGreaterThan(0);
    expect(peak).toBeLessThanOrEqual(limit);
    expect(Math.max(...sampled)).toBeLessThanOrEqual(limit);
    expect(peak).toBe(limit);
    expect([...inFlight((await call(url, "/cluster_info")).body, "generation").values()]).toEqual(generations.map(() => 0));
  });
});

describe("placements are leases", () => {
  test("a placement nobody finishes is released as failed once the reservation timeout passes; its late finish is a no-op", async () => {
    const { url, logs } = await setup({ reservationTimeoutMs: 150 });
    const answer = await select(url, {
      role: "generation",
      routingKey: { kind: "conversation", id: "gone" },
      reqId: 7n,
      excludeServer: undefined,
    });
    const server = text(answer.body["server"]);
    expect(inFlight((await call(url, "/cluster_info")).body, "generation").get(server)).toBe(1);
    await eventually(async () => (await call(url, "/cluster_info")).body["leases"] === 0n, 3000, "the lease expired");
    expect(inFlight((await call(url, "/cluster_info")).body, "generation").get(server)).toBe(0);
    expect(logs.find((line) => line["msg"] === "stale coordinator reservation released")).toMatchObject({
      role: "generation",
      req_id: "7",
    });
    expect(await (await fetch(`${url}/metrics`)).text()).toContain('disagg_proxy_coordinator_leases_expired_total{role="generation"} 1');
    // The serving process's finish arrives after all: nothing is released twice.
    await select(url, { role: "generation", routingKey: { kind: "conversation", id: "gone" }, reqId: 8n, excludeServer: undefined });
    expect((await call(url, "/finish", encodeFinishRequest({ role: "generation", reqId: 7n, success: true }))).status).toBe(200);
    expect(inFlight((await call(url, "/cluster_info")).body, "generation").get(server)).toBe(1);
  });

  test("a second select of the same leg releases the first, so a retried placement counts once", async () => {
    const { url } = await setup({ generations: 1 });
    for (let i = 0; i < 3; i++)
      await select(url, { role: "generation", routingKey: { kind: "none" }, reqId: 9n, excludeServer: undefined });
    const info = (await call(url, "/cluster_info")).body;
    expect(info["leases"]).toBe(1n);
    expect([...inFlight(info, "generation").values()]).toEqual([1]);
  });

  test("--max-inflight counts requests across every serving process: a request's second leg is never refused", async () => {
    const { url } = await setup({ config: { maxInflight: 1 } });
    expect((await select(url, { role: "context", routingKey: { kind: "none" }, reqId: 1n, excludeServer: undefined })).status).toBe(200);
    expect((await select(url, { role: "generation", routingKey: { kind: "none" }, reqId: 1n, excludeServer: undefined })).status).toBe(200);
    const refused = await select(url, { role: "context", routingKey: { kind: "none" }, reqId: 2n, excludeServer: undefined });
    expect(refused.status).toBe(429);
    expect(refused.body["code"]).toBe("OVERLOADED");
  });
});

describe("the coordinator reads the workers' KV events, and is the only one to", () => {
  test("a finish makes the coordinator drain that worker's /kv_cache_events, and the next placement of the prompt goes where it is cached", async () => {
    const { url, contexts, coordinator } = await setup({
      contexts: 2,
      generations: 1,
      config: { contextRouter: "kv_cache_aware", generationRouter: "round_robin" },
      worker: { tokensPerBlock: 32 },
    });
    const ids = Array.from({ length: 256 }, (_, i) => 1000 + i);
    const hashes = fullBlockHashes(ids, 32);
    const key: SelectRequest["routingKey"] = {
      kind: "blocks",
      hashesByAlgo: new Map([[TOKEN_HASH_ALGO, [hashes]]]),
      convKey: undefined,
      numTokens: ids.length,
      conversationId: undefined,
    };
    // The prompt's prefill runs on the second context worker, as a serving process sent it there.
    const cached = contexts[1];
    if (cached === undefined) throw new Error("two context workers");
    const prefill = await fetch(`${cached.url}/v1/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        prompt: ids,
        max_tokens: 1,
        disaggregated_params: { request_type: "context_only", disagg_request_id: 77 },
      }),
    });
    expect(prefill.status).toBe(200);
    // Legs finish on both workers (ties go in turn) until the coordinator has read the cached one's events.
    let matched: MsgpackValue | undefined;
    for (let reqId = 1n; reqId <= 4n && matched === undefined; reqId++) {
      const answer = await select(url, { role: "context", routingKey: key, reqId, excludeServer: undefined });
      const info = answer.body["info"];
      if (isMsgpackMap(info) && Number(info["match_length"]) > 0) matched = answer.body["server"];
      await call(url, "/finish", encodeFinishRequest({ role: "context", reqId, success: true }));
      await coordinator.service.learned();
    }
    expect(matched).toBe(nameOf(cached));
    // Each event went to the coordinator: what the worker still holds for another reader is nothing.
    const left = await fetch(`${cached.url}/kv_cache_events`, { method: "POST" });
    expect(await left.json()).toEqual([]);
  });
});
