import { describe, expect, test } from "bun:test";
import { README_EXAMPLE } from "./readme-example-fixture.ts";
import { errorOf } from "./yaml-error-of.ts";
import { parseTrtllmYaml } from "./trtllm-yaml.ts";

describe("parseTrtllmYaml", () => {
  test("reads the README example", () => {
    const { settings, unknown, workerKeys } = parseTrtllmYaml(README_EXAMPLE, "disagg_config.yaml");
    expect(settings).toEqual({
      host: "localhost",
      port: 8000,
      contextServers: ["http://localhost:8001", "http://localhost:8002"],
      generationServers: ["http://localhost:8003"],
    });
    expect(unknown).toEqual([]);
    expect(workerKeys).toEqual(["backend"]);
  });

  test("reads every implemented key", () => {
    const yaml = `
hostname: 0.0.0.0
port: 0
max_retries: 3
schedule_style: generation_first
node_id: 42
context_servers: { urls: ["http://ctx:1/", "https://ctx:2"], router: { type: load_balancing } }
generation_servers: { num_instances: 1, urls: ["gen:3"], router: { type: round_robin } }
`;
    expect(parseTrtllmYaml(yaml, "f").settings).toEqual({
      host: "0.0.0.0",
      port: 0,
      maxRetries: 3,
      schedule: "generation_first",
      nodeId: 42,
      contextServers: ["http://ctx:1", "https://ctx:2"],
      contextRouter: "load_balancing",
      generationServers: ["http://gen:3"],
      generationRouter: "round_robin",
    });
  });

  test("sorts keys into worker settings (ignored silently) and unknown ones (with the nearest known name)", () => {
    const yaml = `
backend: pytorch
model: TinyLlama
perf_metrics_max_requests: 1000
conditional_disagg_config: { max_local_prefill_length: 100 }
otlp_config: { otlp_traces_endpoint: "http://otel:4317" }
context_servers:
  tensor_parallel_size: 2
  kv_cache_config: { free_gpu_memory_fraction: 0.2 }
  urls: ["c:1"]
  router: { type: load_balancing, use_tokens: true }
  rooter: { type: round_robin }
generation_servers: { urls: ["g:1"], cache_transceiver_config: { backend: UCX }, frobnicate: 1 }
schedule_styel: generation_first
`;
    const parsed = parseTrtllmYaml(yaml, "f");
    expect(parsed.workerKeys).toEqual([
      "backend",
      "model",
      "context_servers.tensor_parallel_size",
      "context_servers.kv_cache_config",
      "generation_servers.cache_transceiver_config",
    ]);
    expect(parsed.unknown).toEqual([
      "schedule_styel (did you mean schedule_style?)",
      "context_servers.rooter (did you mean router?)",
      "generation_servers.frobnicate",
    ]);
    expect(parsed.settings.routerOptions?.context).toEqual({ useTokens: true });
  });

  test("worker keys newer than the LLM arguments read are worker keys too: iter_perf_stats_interval (#19717)", () => {
    const parsed = parseTrtllmYaml(
      "context_servers: { urls: ['c:1'], iter_perf_stats_interval: 10 }\ngeneration_servers: { urls: ['g:1'] }",
      "f",
    );
    expect(parsed.workerKeys).toEqual(["context_servers.iter_perf_stats_interval"]);
    expect(parsed.unknown).toEqual([]);
  });

  test("reads the conversation and kv_cache_aware routers with their arguments", () => {
    const yaml = `
context_servers:
  urls: ["c:1"]
  router: { type: conversation, match_threshold: 0.5, tokens_per_block: 64, max_sessions: 10, hash_skip_count: 3, use_token_ids: true }
generation_servers:
  urls: ["g:1"]
  router: { type: kv_cache_aware, max_batch_size: 8, tokens_per_block: 16 }
`;
    const { settings, unknown } = parseTrtllmYaml(yaml, "f");
    expect(settings).toMatchObject({ contextRouter: "conversation", generationRouter: "kv_cache_aware" });
    expect(settings.routerOptions).toEqual({
      context: { matchThreshold: 0.5, tokensPerBlock: 64, maxSessions: 10, hashSkipCount: 3, useTokenIds: true },
      generation: { maxBatchSize: 8, tokensPerBlock: 16 },
    });
    expect(unknown).toEqual([]);
  });

  test("a kv_cache_aware router takes max_batch_size and the KV block size from its section unless its router block sets them", () => {
    const yaml = `
context_servers:
  max_batch_size: 32
  kv_cache_config: { tokens_per_block: 64, free_gpu_memory_fraction: 0.5 }
  router: { type: kv_cache_aware }
generation_servers:
  max_batch_size: 32
  kv_cache_config: { tokens_per_block: 64 }
  router: { type: kv_cache_aware, max_batch_size: 4, tokens_per_block: auto }
`;
    const { settings, unknown } = parseTrtllmYaml(yaml, "f");
    expect(settings.routerOptions).toEqual({
      context: { maxBatchSize: 32, tokensPerBlock: 64 },
      generation: { maxBatchSize: 4, tokensPerBlock: 64 },
    });
    expect(unknown).toEqual([]);
  });

  test("arguments a router type does not take are listed as unknown, and set no router options", () => {
    const yaml = `
context_servers: { max_batch_size: 8, router: { type: round_robin, match_threshold: 0.5 } }
generation_servers: { router: { type: kv_cache_aware, use_token_ids: true, model_path: /m } }
`;
    const { settings, unknown } = parseTrtllmYaml(yaml, "f");
    expect(settings.routerOptions).toBeUndefined();
    expect(unknown).toEqual([
      "context_servers.router.match_threshold",
      "generation_servers.router.use_token_ids",
      "generation_servers.router.model_path",
    ]);
  });

  test("duplicate URLs of one role are dropped; num_instances counts what the file lists", () => {
    const yaml = `context_servers: { num_instances: 2, urls: ["c:1", "http://c:1"] }`;
    expect(parseTrtllmYaml(yaml, "f").settings.contextServers).toEqual(["http://c:1"]);
  });

  test("an empty file is an empty config", () => {
    expect(parseTrtllmYaml("", "f")).toEqual({
      settings: {},
      unknown: [],
      workerKeys: [],
      warnings: [],
      instances: { context: undefined, generation: undefined },
    });
  });

  test("a worker key at the top level is handed down to both sections, and a section setting it otherwise is refused with upstream's message", () => {
    const same =
      "max_batch_size: 8\ncontext_servers: { max_batch_size: 8, router: { type: kv_cache_aware } }\ngeneration_servers: { router: { type: kv_cache_aware } }";
    expect(parseTrtllmYaml(same, "f").settings.routerOptions).toEqual({ context: { maxBatchSize: 8 }, generation: { maxBatchSize: 8 } });
    expect(errorOf("kv_cache_config: { tokens_per_block: 32 }\ngeneration_servers: { kv_cache_config: { tokens_per_block: 64 } }")).toBe(
      "Invalid config: Parameter kv_cache_config is specified both in the top-level and in the generation_servers section, but with different values",
    );
  });

  test("YAML 1.1 words PyYAML reads as booleans are booleans here too", () => {
    const yaml =
      "allow_request_chat_template: yes\ngen_strip_message_history: Off\ncontext_servers: { router: { type: load_balancing, use_tokens: ON } }";
    const { settings } = parseTrtllmYaml(yaml, "f");
    expect(settings).toMatchObject({ allowRequestChatTemplate: true, genStripMessageHistory: false });
    expect(settings.routerOptions?.context).toEqual({ useTokens: true });
  });

  test.each([
    ["port: abc", 'Invalid config: port must be an integer from 0 to 65535, not "abc"'],
    ["port: 70000", "Invalid config: port must be an integer from 0 to 65535, not 70000"],
    ["hostname: 5", "Invalid config: hostname must be a non-empty string, not 5"],
    ["max_retries: -1", "Invalid config: max_retries must be an integer >= 0, not -1"],
    ["node_id: 256", "Invalid config: node_id must be an integer from 0 to 255, not 256"],
    ["schedule_style: random", 'Invalid config: schedule_style must be one of context_first, generation_first, not "random"'],
    ["context_servers: [a]", "Invalid config: context_servers must be a mapping (num_instances, urls, router)"],
    ["context_servers: { urls: localhost:8001 }", 'Invalid config: context_servers.urls must be a list of "host:port" strings'],
    ["generation_servers: { urls: [8001] }", 'Invalid config: generation_servers.urls must be a list of "host:port" strings'],
    [
      "context_servers: { urls: [localhost] }",
      'Invalid config: context_servers.urls[0] must be "host:port" or "http(s)://host:port", not "localhost"',
    ],
    [
      "context_servers: { num_instances: 2, urls: [a:1] }",
      "Invalid config: context_servers.num_instances is 2 but context_servers.urls lists 1: set context_servers.num_instances to 1 (or remove it)",
    ],
    ["context_servers: { num_instances: two }", 'Invalid config: context_servers.num_instances must be an integer >= 0, not "two"'],
    ["generation_servers: { router: round_robin }", "Invalid config: generation_servers.router must be a mapping with a type"],
    [
      "generation_servers: { router: { type: random } }",
      'Invalid config: generation_servers.router.type must be one of round_robin, load_balancing, conversation, kv_cache_aware, centralized_kv_cache_aware, remote_http, not "random"',
    ],
    [
      "context_servers: { router: { type: conversation, match_threshold: 1.5 } }",
      "Invalid config: context_servers.router.match_threshold must be a number from 0 to 1, not 1.5",
    ],
    [
      "context_servers: { router: { type: conversation, use_token_ids: maybe } }",
      'Invalid config: context_servers.router.use_token_ids must be true or false, not "maybe"',
    ],
    [
      "context_servers: { router: { type: conversation, max_sessions: 0 } }",
      "Invalid config: context_servers.router.max_sessions must be an integer >= 1, not 0",
    ],
    [
      "generation_servers: { router: { type: kv_cache_aware, tokens_per_block: 0 } }",
      "Invalid config: generation_servers.router.tokens_per_block must be an integer >= 1, not 0",
    ],
    [
      "generation_servers: { max_batch_size: big, router: { type: kv_cache_aware } }",
      'Invalid config: generation_servers.max_batch_size must be an integer >= 1, not "big"',
    ],
    ["- a\n- b", "Invalid config: disagg_config.yaml must hold a YAML mapping of settings"],
  ])("%p is refused with a message naming the key", (yaml, message) => {
    expect(errorOf(yaml)).toBe(message);
  });

  test("a YAML syntax error names the file", () => {
    expect(errorOf("context_servers: [unclosed")).toStartWith("Invalid config: disagg_config.yaml is not valid YAML: ");
  });
});
