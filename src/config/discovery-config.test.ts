import { describe, expect, test } from "bun:test";
import { clusterDiscovery, metadataDiscovery } from "./discovery-config.ts";

describe("discovery config", () => {
  test("disagg_cluster is read with upstream's defaults", () => {
    expect(clusterDiscovery({ cluster_uri: "etcd://127.0.0.1:2379", cluster_name: "prod" })).toEqual({
      kind: "cluster",
      storage: "etcd",
      endpoint: "http://127.0.0.1:2379",
      clusterName: "prod",
      minimalContext: 1,
      minimalGeneration: 1,
      leaseTtlMs: 10_000,
    });
    const sized = clusterDiscovery({
      cluster_uri: "etcd://e:1",
      minimal_instances: { context_servers: 2, generation_servers: 3 },
      inactive_timeout_sec: 4,
    });
    expect(sized).toMatchObject({ minimalContext: 2, minimalGeneration: 3, leaseTtlMs: 4000 });
  });

  test("an http(s) cluster_uri is the proxy's own cluster storage", () => {
    expect(
      clusterDiscovery({
        cluster_uri: "http://localhost:8000",
        cluster_name: "test_cluster",
        heartbeat_interval_sec: 1,
        inactive_timeout_sec: 2,
      }),
    ).toMatchObject({
      kind: "cluster",
      storage: "http",
      endpoint: "http://localhost:8000",
      clusterName: "test_cluster",
    });
  });

  test.each([
    [{ cluster_uri: "etcd://e:1", surprise: 1 }, "disagg_cluster.surprise"],
    [{ cluster_uri: "http://" }, "cluster_uri"],
    [{ cluster_uri: 5 }, "cluster_uri"],
    [{ cluster_uri: "etcd://e:1", minimal_instances: { context_servers: "two" } }, "minimal_instances.context_servers"],
  ])("a wrong disagg_cluster %p is refused naming %p", (value, named) => {
    expect(() => clusterDiscovery(value)).toThrow(named);
  });

  test("metadata_config.yaml is read, upstream's misspelt refresh key included", () => {
    const config = metadataDiscovery(
      "server_type: etcd\nhostname: 10.0.0.5\nport: 2380\nhealth_check_timeout: 2.5\nrefersh_interval: 3\n",
      "meta.yaml",
    );
    expect(config).toEqual({ kind: "metadata", endpoint: "http://10.0.0.5:2380", healthCheckTimeoutMs: 2500, refreshIntervalMs: 3000 });
  });

  test("a metadata server that is not etcd is refused", () => {
    expect(() => metadataDiscovery("server_type: redis\n", "meta.yaml")).toThrow("server_type");
  });
});
