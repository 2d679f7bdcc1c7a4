import { describe, expect, test } from "bun:test";
import { clusterDiscovery, metadataDiscovery } from "./discovery-config.ts";
import { namedHosts, unresolvedName } from "./named-hosts.ts";

const known = new Set(["localhost", "proxy.example", "etcd-a", "etcd-b"]);
const lookup = (host: string): Promise<unknown> =>
  known.has(host) ? Promise.resolve([]) : Promise.reject(Object.assign(new Error("getaddrinfo ENOTFOUND"), { code: "DNS_ENOTFOUND" }));

const never = (): Promise<unknown> => new Promise(() => undefined);

describe("host names checked at start-up", () => {
  test("the bound host and every etcd member are named, IP literals and workers are not", () => {
    const discovery = clusterDiscovery({ cluster_uri: "etcd://etcd-a:2379,etcd://10.0.0.5:2379,etcd://[fd00::1]:2379" });
    expect(namedHosts({ host: "advertised.example", bindHost: "0.0.0.0", discovery })).toEqual([
      { host: "etcd-a", namedBy: "disagg_cluster.cluster_uri" },
    ]);
    expect(namedHosts({ host: "proxy.example", bindHost: undefined, discovery: undefined })).toEqual([
      { host: "proxy.example", namedBy: "hostname (--host)" },
    ]);
    const metadata = metadataDiscovery("hostname: etcd-b\nport: 2379\n", "m.yaml");
    expect(namedHosts({ host: "localhost", bindHost: "proxy.example", discovery: metadata }).map((named) => named.namedBy)).toEqual([
      "bind_host (--bind-host)",
      "the metadata server (-m)",
    ]);
    // The HTTP cluster storage is served by the proxy itself: its URI's host is the workers' business.
    expect(
      namedHosts({ host: "127.0.0.1", bindHost: undefined, discovery: clusterDiscovery({ cluster_uri: "http://gpu-node-001:8000" }) }),
    ).toEqual([]);
  });

  test("an unresolvable name, wherever it is named, is one line naming it and its setting", async () => {
    const etcd = clusterDiscovery({ cluster_uri: "etcd://gpu-node-001" });
    expect(await unresolvedName({ host: "localhost", bindHost: undefined, discovery: etcd }, lookup, 1000)).toBe(
      "cannot resolve gpu-node-001 (named by disagg_cluster.cluster_uri): the name does not resolve (ENOTFOUND)",
    );
    expect(await unresolvedName({ host: "svc.example", bindHost: undefined, discovery: undefined }, lookup, 1000)).toBe(
      "cannot resolve svc.example (named by hostname (--host)): the name does not resolve (ENOTFOUND)",
    );
    expect(await unresolvedName({ host: "svc.example", bindHost: "localhost", discovery: undefined }, lookup, 1000)).toBeUndefined();
  });

  test("a lookup that never answers is bounded", async () => {
    expect(await unresolvedName({ host: "slow.example", bindHost: undefined, discovery: undefined }, never, 50)).toBe(
      "cannot resolve slow.example (named by hostname (--host)): no answer within 0.05 s",
    );
  });
});
