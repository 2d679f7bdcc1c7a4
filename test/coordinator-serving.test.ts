/**
 * `disagg-proxy coordinator` with the serving processes around it: our replicas delegating to it
 * (over TCP and over its Unix socket), and workers discovered through the HTTP cluster storage it
 * serves. Workers are emulated on port 0.
 */

import { afterEach, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startCoordinator } from "../src/coordinator/run.ts";
import { etcdRegistrar, httpRegistrar } from "../src/discovery/index.ts";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { isMsgpackMap } from "../src/json/msgpack-read.ts";
import { memoryLogger, silentLogger } from "../src/observability/logger.ts";
import { decodeWire, encodeFinishRequest, encodeSelectRequest } from "../src/routing/coordinator-wire.ts";
import { startProxy } from "../src/server/serve.ts";
import { configFor } from "./support/cluster.ts";
import { freePort, startEtcd } from "./support/etcd.ts";
import { call, nameOf, running, select, setup, stopStarted } from "./support/coordinator.ts";
import { eventually } from "./support/wait.ts";

afterEach(stopStarted);

describe("our replicas and our coordinator", () => {
  test("two replicas delegating to it keep a conversation's turns on one generation worker, and every placement is finished", async () => {
    const { url, generations, coordinator } = await setup({ generations: 3, config: { generationRouter: "conversation" } });
    const replicas = [1, 2].map((nodeId) =>
      startProxy(
        configFor([], generations, {
          contextServers: coordinator.service.placement.pool.all("context").map((w) => w.origin),
          generationRouter: "conversation",
          disaggCoordinatorUrl: url,
          serverStartTimeoutMs: 5000,
          nodeId,
        }),
        memoryLogger(),
        "test",
      ),
    );
    running.push(async () => {
      await Promise.all(replicas.map((replica) => replica.stop()));
    });
    for (const replica of replicas) expect(await replica.waitForWorkers()).toBe(true);
    for (let turn = 0; turn < 6; turn++) {
      const replica = replicas[turn % 2];
      const answer = await fetch(`${replica?.url.origin}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-session-id": "conv-shared" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: `turn ${turn}` }], max_tokens: 2 }),
      });
      expect(answer.status).toBe(200);
      await answer.text();
    }
    // Every generation leg ran where the first went, whichever replica took the turn.
    const served = generations.map((worker) => worker.requests.filter((r) => r.path === "/v1/chat/completions").length);
    expect(served.toSorted((a, b) => a - b)).toEqual([0, 0, 6]);
    // The coordinator placed them: its own conversation map sends the conversation there.
    const home = generations[served.indexOf(6)];
    const asked = await select(url, {
      role: "generation",
      routingKey: { kind: "conversation", id: "conv-shared" },
      reqId: 1n,
      excludeServer: undefined,
    });
    expect(asked.body["server"]).toBe(home === undefined ? "" : nameOf(home));
    await call(url, "/finish", encodeFinishRequest({ role: "generation", reqId: 1n, success: true }));
    await eventually(async () => (await call(url, "/cluster_info")).body["leases"] === 0n, 3000, "every placed leg finished");
  });
});

describe("the coordinator owns discovery", () => {
  test("workers registering in the HTTP cluster storage it serves join its pool, are placed on, and leave when they deregister", async () => {
    const port = freePort();
    const endpoint = `http://127.0.0.1:${port}`;
    const discovery = {
      kind: "cluster",
      storage: "http",
      endpoint,
      clusterName: "coord",
      minimalContext: 1,
      minimalGeneration: 1,
      leaseTtlMs: 2000,
    } as const;
    const config = configFor([], [], { discovery, serverStartTimeoutMs: 50, healthCheckIntervalMs: 50, nodeId: 1 });
    const coordinator = startCoordinator(config, { port, reservationTimeoutMs: 180_000 }, memoryLogger(), "test");
    running.push(() => coordinator.stop());
    expect(await coordinator.waitForWorkers()).toBe(false);
    expect((await fetch(`${endpoint}/health`)).status).toBe(503);
    // As upstream's workers register (trtllm-serve --disagg_cluster_uri http://coordinator:port).
    const register = (): ReturnType<typeof httpRegistrar> =>
      httpRegistrar({ uri: endpoint, clusterName: "coord", heartbeatMs: 200, ttlMs: 1000, logger: silentLogger, retryMs: 100 });
    const context = startEmulatedWorker({ role: "context", register: register() });
    const generation = startEmulatedWorker({ role: "generation", register: register() });
    running.push(() => context.stop());
    await eventually(() => coordinator.service.ready(), 5000, "the registered workers are ready");
    const placed = await select(endpoint, { role: "generation", routingKey: { kind: "none" }, reqId: 1n, excludeServer: undefined });
    expect(placed.body["server"]).toBe(nameOf(generation));
    await generation.stop();
    await eventually(
      async () => {
        const lists = (await call(endpoint, "/cluster_info")).body["server_lists"];
        return isMsgpackMap(lists) && Array.isArray(lists["generation"]) && lists["generation"].length === 0;
      },
      5000,
      "the deregistered worker left",
    );
  });
});

describe("replicas of a coordinator that owns the HTTP cluster storage", () => {
  test("list the workers registered at the coordinator (its /cluster_info), serve through them, and drop one that leaves", async () => {
    const port = freePort();
    const endpoint = `http://127.0.0.1:${port}`;
    const discovery = {
      kind: "cluster",
      storage: "http",
      endpoint,
      clusterName: "owned",
      minimalContext: 1,
      minimalGeneration: 1,
      leaseTtlMs: 2000,
    } as const;
    const base = configFor([], [], {
      generationRouter: "conversation",
      discovery,
      serverStartTimeoutMs: 50,
      healthCheckIntervalMs: 50,
      nodeId: 1,
    });
    const coordinator = startCoordinator(base, { port, reservationTimeoutMs: 180_000 }, memoryLogger(), "test");
    running.push(() => coordinator.stop());
    const register = (): ReturnType<typeof httpRegistrar> =>
      httpRegistrar({ uri: endpoint, clusterName: "owned", heartbeatMs: 200, ttlMs: 1000, logger: silentLogger, retryMs: 100 });
    const context = startEmulatedWorker({ role: "context", register: register() });
    const generation = startEmulatedWorker({ role: "generation", register: register() });
    running.push(() => Promise.all([context.stop(), generation.stop()]).then(() => undefined));
    const logger = memoryLogger();
    const replica = startProxy({ ...base, disaggCoordinatorUrl: endpoint, serverStartTimeoutMs: 5000, nodeId: 5 }, logger, "test");
    running.unshift(() => replica.stop());
    await eventually(
      async () => (await fetch(`${replica.url.origin}/health`)).status === 200,
      5000,
      "the replica lists the registered workers",
    );
    const answer = await fetch(`${replica.url.origin}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-id": "conv-owned" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
    });
    expect(answer.status).toBe(200);
    await answer.text();
    await eventually(() => logger.records.some((r) => r["msg"] === "request" && r["placed_by"] !== undefined), 2000, "the request line");
    expect(logger.records.find((r) => r["msg"] === "request")?.["placed_by"]).toBe("context:local generation:coordinator");
    await generation.stop();
    await eventually(
      async () => (await fetch(`${replica.url.origin}/health`)).status === 503,
      5000,
      "the replica drops the worker that left",
    );
  });
});

describe("the coordinator owns etcd discovery", () => {
  test("workers registering in etcd (disagg_cluster etcd://) join its pool and are placed on", async () => {
    await using etcd = await startEtcd();
    const discovery = {
      kind: "cluster",
      storage: "etcd",
      endpoint: etcd.endpoint,
      clusterName: "coord-etcd",
      minimalContext: 1,
      minimalGeneration: 1,
      leaseTtlMs: 2000,
    } as const;
    const config = configFor([], [], { discovery, serverStartTimeoutMs: 50, healthCheckIntervalMs: 50, nodeId: 1 });
    const coordinator = startCoordinator(config, { port: 0, reservationTimeoutMs: 180_000 }, memoryLogger(), "test");
    running.push(() => coordinator.stop());
    const register = (): ReturnType<typeof etcdRegistrar> =>
      etcdRegistrar({ endpoint: etcd.endpoint, clusterName: "coord-etcd", heartbeatMs: 300, ttlMs: 2000, logger: silentLogger });
    const context = startEmulatedWorker({ role: "context", register: register() });
    const generation = startEmulatedWorker({ role: "generation", register: register() });
    running.unshift(async () => {
      await Promise.all([context.stop(), generation.stop()]);
    });
    await coordinator.waitForWorkers();
    await eventually(() => coordinator.service.ready(), 10_000, "the workers registered in etcd are ready");
    const placed = await select(coordinator.url.origin, {
      role: "context",
      routingKey: { kind: "none" },
      reqId: 1n,
      excludeServer: undefined,
    });
    expect(placed.body["server"]).toBe(nameOf(context));
  });
});

describe("a Unix socket beside the port", () => {
  test("a replica whose disagg_coordinator_url is unix:/path is placed over the socket, which is gone once the coordinator stops", async () => {
    const socketPath = join(mkdtempSync(join(tmpdir(), "coord-uds-")), "coordinator.sock");
    const { coordinator, contexts, generations } = await setup({ socketPath, config: { generationRouter: "conversation" } });
    const replica = startProxy(
      configFor(contexts, generations, {
        generationRouter: "conversation",
        disaggCoordinatorUrl: `unix:${socketPath}`,
        serverStartTimeoutMs: 5000,
        nodeId: 4,
      }),
      memoryLogger(),
      "test",
    );
    running.unshift(() => replica.stop());
    expect(await replica.waitForWorkers()).toBe(true);
    const answer = await fetch(`${replica.url.origin}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-session-id": "conv-uds" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 2 }),
    });
    expect(answer.status).toBe(200);
    await answer.text();
    const served = generations.find((worker) => worker.requests.some((r) => r.path === "/v1/chat/completions"));
    const asked = await fetch("http://localhost/select", {
      unix: socketPath,
      method: "POST",
      body: encodeSelectRequest({
        role: "generation",
        routingKey: { kind: "conversation", id: "conv-uds" },
        reqId: 5n,
        excludeServer: undefined,
      }),
    });
    const read = decodeWire(await asked.bytes());
    expect(read.ok && isMsgpackMap(read.value) ? read.value["server"] : undefined).toBe(served === undefined ? "none" : nameOf(served));
    await coordinator.stop();
    expect(existsSync(socketPath)).toBe(false);
  });
});
