import { describe, expect, test } from "bun:test";
import { README_EXAMPLE } from "./readme-example-fixture.ts";
import type { ServeFlags } from "./cli-options.ts";
import { ConfigError } from "./errors.ts";
import { loadConfig, type LoadDeps } from "./load.ts";
import { DEFAULTS } from "./types.ts";

const WORKERS: ServeFlags = { contextServers: ["http://c:1"], generationServers: ["http://g:1"] };

function deps(files: Record<string, string> = {}, env: Record<string, string> = {}): LoadDeps {
  return {
    readFile: (path) => {
      const text = files[path];
      if (text === undefined) throw new Error(`ENOENT: no such file or directory, open '${path}'`);
      return text;
    },
    env,
    defaultNodeId: () => 99,
  };
}

describe("loadConfig", () => {
  test("flags only: defaults fill everything the flags leave out", () => {
    const { config, warnings } = loadConfig({ ...WORKERS, port: 0, requestTimeoutMs: 1500 }, deps());
    expect(config).toEqual({
      ...DEFAULTS,
      port: 0,
      requestTimeoutMs: 1500,
      contextServers: ["http://c:1"],
      generationServers: ["http://g:1"],
      nodeId: 99,
      configFile: undefined,
    });
    expect(warnings).toEqual([]);
  });

  test("sub-agent affinity without internal_request_auth_key is refused at start-up with upstream's words", () => {
    const files = {
      "a.yaml": "conversation_affinity_header_for_subagents: X-Parent\n",
      "b.yaml": "conversation_affinity_header_for_subagents: X-Parent\ninternal_request_auth_key: k\n",
    };
    expect(() => loadConfig({ ...WORKERS, configFile: "a.yaml" }, deps(files))).toThrow(
      new ConfigError("Invalid config: Subagent affinity requires internal_request_auth_key"),
    );
    const { config, warnings } = loadConfig({ ...WORKERS, configFile: "b.yaml" }, deps(files));
    expect(config).toMatchObject({ subagentAffinityHeader: "X-Parent", subagentAffinityScope: "context" });
    expect(warnings).toEqual([]);
  });

  test("--worker-protocol takes auto or a TensorRT-LLM release number, and --responses-fallback its two modes", () => {
    expect(loadConfig({ ...WORKERS }, deps()).config).toMatchObject({ workerProtocol: "auto", responsesFallback: "error" });
    for (const version of ["1.3.0rc18", "1.3.0rc15.post1", "1.3.0", "v1.4"]) {
      expect(loadConfig({ ...WORKERS, workerProtocol: version }, deps()).config.workerProtocol).toBe(version);
    }
    expect(() => loadConfig({ ...WORKERS, workerProtocol: "latest" }, deps())).toThrow(ConfigError);
    expect(() => loadConfig({ ...WORKERS, workerProtocol: "latest" }, deps())).toThrow(
      "--worker-protocol must be auto or a TensorRT-LLM version",
    );
    expect(loadConfig({ ...WORKERS, responsesFallback: "aggregated" }, deps()).config.responsesFallback).toBe("aggregated");
  });

  test("YAML only: the README example starts without a warning; its worker key is a debug note", () => {
    const { config, warnings, notes } = loadConfig({ configFile: "d.yaml" }, deps({ "d.yaml": README_EXAMPLE }));
    expect(config.host).toBe("localhost");
    expect(config.port).toBe(8000);
    expect(config.contextServers).toEqual(["http://localhost:8001", "http://localhost:8002"]);
    expect(config.generationServers).toEqual(["http://localhost:8003"]);
    expect(config.configFile).toBe("d.yaml");
    expect(warnings).toEqual([]);
    expect(notes).toEqual([
      {
        level: "debug",
        text: "Worker settings in the config file, for the workers and not the proxy (as trtllm-serve's proxy ignores them): backend",
      },
    ]);
  });

  test("an unknown key is warned about with the nearest known name", () => {
    const { warnings } = loadConfig(
      { configFile: "d.yaml" },
      deps({
        "d.yaml": `${README_EXAMPLE}
max_retires: 2
`,
      }),
    );
    expect(warnings).toEqual([
      "Ignoring config keys neither this proxy nor TensorRT-LLM's workers know: max_retires (did you mean max_retries?)",
    ]);
  });

  test("num_workers runs that many event loops; with a router whose index lives in one loop, or discovered workers, one loop serves and says why", () => {
    expect(loadConfig({ ...WORKERS, numWorkers: 4 }, deps()).config.numWorkers).toBe(4);
    expect(loadConfig({ configFile: "d.yaml" }, deps({ "d.yaml": `${README_EXAMPLE}\nnum_workers: 3\n` })).config.numWorkers).toBe(3);
    const kv = loadConfig({ ...WORKERS, numWorkers: 4, generationRouter: "kv_cache_aware" }, deps());
    expect(kv.config.numWorkers).toBe(1);
    expect(kv.warnings).toContain(
      "num_workers: 4 is not honoured with the kv_cache_aware router (its index lives in one event loop): one event loop serves the port",
    );
    expect(loadConfig({ ...WORKERS, numWorkers: 2, contextRouter: "conversation" }, deps()).config.numWorkers).toBe(1);
  });

  test("with a coordinator, num_workers runs every loop whatever the router: the routers' state lives there", () => {
    const fleet = loadConfig(
      { ...WORKERS, numWorkers: 4, generationRouter: "kv_cache_aware", disaggCoordinatorUrl: "http://c:7999" },
      deps(),
    );
    expect(fleet.config.numWorkers).toBe(4);
    expect(fleet.warnings).toEqual([]);
  });

  test("num_instances without urls gets a hint: this proxy launches no workers", () => {
    const yaml = "context_servers: { num_instances: 2 }\ngeneration_servers: { num_instances: 1, urls: [g:1] }";
    expect(() => loadConfig({ configFile: "d.yaml" }, deps({ "d.yaml": yaml }))).toThrow(
      "context_servers.num_instances is 2 but no urls are listed: this proxy launches no workers, so give their addresses (--context URL, repeatable, or context_servers.urls) or let them register (disagg_cluster, -m)",
    );
  });

  test("num_instances: 0 for context hints at TRTLLM_DISAGG_BENCHMARK_GEN_ONLY=1, which makes it start", () => {
    const yaml = "context_servers: { num_instances: 0 }\ngeneration_servers: { num_instances: 1, urls: [g:1] }";
    expect(() => loadConfig({ configFile: "d.yaml" }, deps({ "d.yaml": yaml }))).toThrow("set TRTLLM_DISAGG_BENCHMARK_GEN_ONLY=1");
    const { config } = loadConfig({ configFile: "d.yaml" }, deps({ "d.yaml": yaml }, { TRTLLM_DISAGG_BENCHMARK_GEN_ONLY: "1" }));
    expect(config.benchmarkGenerationOnly).toBe(true);
  });

  test("cluster allow-from networks are checked at start-up, from flags or the YAML", () => {
    expect(loadConfig({ ...WORKERS, clusterAllowFrom: ["10.0.0.0/8", "fd00::/8"] }, deps()).config.clusterAllowFrom).toEqual([
      "10.0.0.0/8",
      "fd00::/8",
    ]);
    const yaml = `${README_EXAMPLE}\ncluster_allow_from: [192.168.0.0/16]\n`;
    expect(loadConfig({ configFile: "d.yaml" }, deps({ "d.yaml": yaml })).config.clusterAllowFrom).toEqual(["192.168.0.0/16"]);
    expect(() => loadConfig({ ...WORKERS, clusterAllowFrom: ["10.0.0.0/33"] }, deps())).toThrow(
      'cluster allow-from "10.0.0.0/33" is not a network',
    );
    expect(() => loadConfig({ ...WORKERS, clusterAllowFrom: ["lan"] }, deps())).toThrow("is not a network");
  });

  test("an http cluster_uri naming another port than the proxy's is warned about", () => {
    const yaml = `port: 8000\ndisagg_cluster: { cluster_uri: "http://head:8000" }\n`;
    expect(loadConfig({ configFile: "d.yaml" }, deps({ "d.yaml": yaml })).warnings).toEqual([]);
    expect(loadConfig({ configFile: "d.yaml", port: 9000 }, deps({ "d.yaml": yaml })).warnings).toEqual([
      "disagg_cluster.cluster_uri http://head:8000 names port 8000, but this proxy serves its cluster storage on port 9000: workers given that URI will not reach it",
    ]);
    expect(loadConfig({ configFile: "d.yaml", port: 0 }, deps({ "d.yaml": yaml })).warnings).toEqual([]);
    // With a coordinator the storage is the coordinator's, on the URI's port: nothing to warn about.
    const fleet = `port: 8001\ndisagg_coordinator_url: "http://head:8000"\ndisagg_cluster: { cluster_uri: "http://head:8000" }\n`;
    expect(loadConfig({ configFile: "d.yaml" }, deps({ "d.yaml": fleet })).warnings).toEqual([]);
  });

  test("flags override the YAML, key by key", () => {
    const yaml = `${README_EXAMPLE}\nmax_retries: 3\nnode_id: 5\nschedule_style: generation_first\n`;
    const flags: ServeFlags = { configFile: "d.yaml", port: 9000, generationServers: ["http://other:1"], nodeId: 6 };
    const { config } = loadConfig(flags, deps({ "d.yaml": yaml }));
    expect(config.port).toBe(9000);
    expect(config.host).toBe("localhost");
    expect(config.contextServers).toEqual(["http://localhost:8001", "http://localhost:8002"]);
    expect(config.generationServers).toEqual(["http://other:1"]);
    expect(config.maxRetries).toBe(3);
    expect(config.nodeId).toBe(6);
    expect(config.schedule).toBe("generation_first");
  });

  test("node_id from the YAML beats the MAC-derived default", () => {
    const { config } = loadConfig({ ...WORKERS, configFile: "d.yaml" }, deps({ "d.yaml": "node_id: 0" }));
    expect(config.nodeId).toBe(0);
  });

  test("TRTLLM_DISAGG_NO_RETRY=1 forces maxRetries 0 over flags and YAML, and says so", () => {
    const env = { TRTLLM_DISAGG_NO_RETRY: "1" };
    const { config, warnings } = loadConfig({ ...WORKERS, maxRetries: 4 }, deps({}, env));
    expect(config.maxRetries).toBe(0);
    expect(warnings).toEqual(["Worker call retries are disabled by TRTLLM_DISAGG_NO_RETRY=1"]);
    expect(loadConfig({ ...WORKERS, maxRetries: 4 }, deps({}, { TRTLLM_DISAGG_NO_RETRY: "0" })).config.maxRetries).toBe(4);
  });

  test("the config and its URL lists are frozen", () => {
    const { config } = loadConfig(WORKERS, deps());
    expect(Object.isFrozen(config)).toBe(true);
    expect(Object.isFrozen(config.contextServers)).toBe(true);
    expect(Object.isFrozen(config.generationServers)).toBe(true);
  });

  test("without a context or a generation server start-up fails with a ConfigError", () => {
    expect(() => loadConfig({ generationServers: ["http://g:1"] }, deps())).toThrow(
      new ConfigError("Invalid config: at least one context server is required (--context URL or context_servers.urls)"),
    );
    expect(() => loadConfig({ contextServers: ["http://c:1"] }, deps())).toThrow(
      new ConfigError("Invalid config: at least one generation server is required (--generation URL or generation_servers.urls)"),
    );
  });

  test("an unreadable config file is a ConfigError naming the file", () => {
    expect(() => loadConfig({ ...WORKERS, configFile: "missing.yaml" }, deps())).toThrow(
      "Invalid config: cannot read missing.yaml: ENOENT",
    );
  });

  test("a wrong type in the file surfaces as the reader's ConfigError", () => {
    expect(() => loadConfig({ ...WORKERS, configFile: "d.yaml" }, deps({ "d.yaml": "port: abc" }))).toThrow(ConfigError);
  });

  test("--worker-msgpack turns msgpack bodies on; perf and OTLP keys come from the YAML", () => {
    const yaml = "return_perf_metrics: true\nperf_metrics_max_requests: 8\notlp_config: { otlp_traces_endpoint: 'http://c:4318' }";
    const { config, warnings } = loadConfig({ ...WORKERS, configFile: "d.yaml", workerMsgpack: true }, deps({ "d.yaml": yaml }));
    expect(config).toMatchObject({
      workerMsgpack: true,
      returnPerfMetrics: true,
      perfMetricsMaxRequests: 8,
      perfMetricsOutputDir: undefined,
      otlpTracesEndpoint: "http://c:4318",
    });
    expect(warnings).toEqual([]);
    expect(loadConfig(WORKERS, deps()).config.workerMsgpack).toBe(false);
  });
});
