import { describe, expect, test } from "bun:test";
import { errorOf } from "./yaml-error-of.ts";
import { parseTrtllmYaml } from "./trtllm-yaml.ts";

describe("upstream's newer router types", () => {
  test("remote_http takes remote_url and request_timeout_s (seconds, 5 by default), its trailing slash dropped", () => {
    const yaml = `
context_servers: { urls: ["ctx:1"], router: { type: remote_http, remote_url: "http://router-host:8080/", request_timeout_s: 0.5 } }
generation_servers: { urls: ["gen:1"], router: { type: remote_http, remote_url: "https://router-host:8443" } }
`;
    const { settings, unknown, warnings } = parseTrtllmYaml(yaml, "f");
    expect(settings).toMatchObject({ contextRouter: "remote_http", generationRouter: "remote_http" });
    expect(settings.routerOptions).toEqual({
      context: { remoteUrl: "http://router-host:8080", requestTimeoutMs: 500 },
      generation: { remoteUrl: "https://router-host:8443" },
    });
    expect(unknown).toEqual([]);
    expect(warnings).toEqual([]);
  });

  test("remote_http without remote_url, or with one that is no http(s) base URL, is refused naming the key", () => {
    expect(errorOf(`context_servers: { urls: ["c:1"], router: { type: remote_http } }`)).toBe(
      "Invalid config: context_servers.router.remote_url must be set for router type remote_http (the router HTTP server's base URL, e.g. http://router-host:8080)",
    );
    expect(errorOf(`context_servers: { urls: ["c:1"], router: { type: remote_http, remote_url: "tcp://r:1" } }`)).toContain(
      "context_servers.router.remote_url must be an http(s) base URL",
    );
    expect(
      errorOf(`context_servers: { urls: ["c:1"], router: { type: remote_http, remote_url: "http://r:1", request_timeout_s: 0 } }`),
    ).toBe("Invalid config: context_servers.router.request_timeout_s must be a number above 0, not 0");
  });

  test("centralized_kv_cache_aware runs as kv_cache_aware: its own arguments are known, unused, and one warning names the difference", () => {
    const yaml = `
context_servers:
  urls: ["ctx:1"]
  max_batch_size: 16
  router: { type: centralized_kv_cache_aware, router_port: 5557, load_weight: 0.25, tokens_per_block: 32 }
generation_servers:
  urls: ["gen:1"]
  router: { type: centralized_kv_cache_aware, rank_routing_algo: instance }
`;
    const { settings, unknown, warnings } = parseTrtllmYaml(yaml, "f");
    expect(settings).toMatchObject({ contextRouter: "centralized_kv_cache_aware", generationRouter: "centralized_kv_cache_aware" });
    expect(settings.routerOptions).toEqual({ context: { tokensPerBlock: 32, maxBatchSize: 16 }, generation: {} });
    expect(unknown).toEqual([]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toStartWith(
      "context_servers.router.type and generation_servers.router.type centralized_kv_cache_aware runs as kv_cache_aware",
    );
    expect(warnings[0]).toContain("ZMQ ingest (router_port, 5557)");
    expect(warnings[0]).toContain("no per-rank route_hint");
  });

  test("an unknown type still lists every type upstream knows", () => {
    expect(errorOf(`context_servers: { urls: ["c:1"], router: { type: magic } }`)).toContain(
      "round_robin, load_balancing, conversation, kv_cache_aware, centralized_kv_cache_aware, remote_http",
    );
  });
});
