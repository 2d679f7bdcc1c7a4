import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { claimNodeId, nodeIdKey } from "../src/discovery/index.ts";
import { silentLogger } from "../src/observability/logger.ts";
import { startEtcd, type EtcdServer } from "./support/etcd.ts";

let etcd: EtcdServer;

beforeAll(async () => {
  etcd = await startEtcd();
});

afterAll(async () => {
  await etcd[Symbol.asyncDispose]();
});

const claim = (clusterName: string) => claimNodeId({ endpoint: etcd.endpoint, clusterName, ttlMs: 3000, logger: silentLogger });

describe("node id claims", () => {
  test("two replicas of one cluster get distinct node ids, and a released id is free again", async () => {
    const first = await claim("ids");
    const second = await claim("ids");
    expect(first.nodeId).not.toBe(second.nodeId);
    expect([first.nodeId, second.nodeId].toSorted((a, b) => a - b)).toEqual([0, 1]);
    expect(await etcd.get(nodeIdKey("ids", first.nodeId))).toBeString();

    await first.release();
    expect(await etcd.get(nodeIdKey("ids", first.nodeId))).toBeUndefined();
    const third = await claim("ids");
    expect(third.nodeId).toBe(first.nodeId);
    await Promise.all([second.release(), third.release()]);
  });

  test("replicas claiming at the same moment still get distinct node ids", async () => {
    const claims = await Promise.all(Array.from({ length: 8 }, () => claim("race")));
    expect(claims.map((c) => c.nodeId).toSorted((a, b) => a - b)).toEqual([0, 1, 2, 3, 4, 5, 6, 7]);
    await Promise.all(claims.map((c) => c.release()));
  });

  test("clusters count their node ids separately", async () => {
    const a = await claim("cluster-a");
    const b = await claim("cluster-b");
    expect([a.nodeId, b.nodeId]).toEqual([0, 0]);
    await Promise.all([a.release(), b.release()]);
  });

  test("a claim outlives its TTL while the proxy runs", async () => {
    const held = await claimNodeId({ endpoint: etcd.endpoint, clusterName: "kept", ttlMs: 2000, logger: silentLogger });
    // Nothing to await: the claim must simply still be there after more than one TTL.
    await Bun.sleep(3000);
    expect(await etcd.get(nodeIdKey("kept", held.nodeId))).toBeString();
    expect((await claim("kept")).nodeId).not.toBe(held.nodeId);
    await held.release();
  }, 10_000);

  test("an unreachable etcd rejects the claim", async () => {
    const refused = claimNodeId({ endpoint: "http://127.0.0.1:9", clusterName: "x", ttlMs: 2000, logger: silentLogger });
    const outcome = await refused.then(
      () => "claimed",
      (error: unknown) => error,
    );
    expect(outcome).toBeInstanceOf(Error);
  });
});
