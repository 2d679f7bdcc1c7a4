import { describe, expect, test } from "bun:test";
import type { ServeFlags } from "./cli-options.ts";
import { loadConfig, type LoadDeps } from "./load.ts";

const WORKERS: ServeFlags = { contextServers: ["http://c:1"], generationServers: ["http://g:1"] };

function deps(env: Record<string, string>, files: Record<string, string> = {}): LoadDeps {
  return {
    readFile: (path) => {
      const text = files[path];
      if (text === undefined) throw new Error(`ENOENT: ${path}`);
      return text;
    },
    env,
    defaultNodeId: () => 7,
  };
}

describe("upstream environment variables", () => {
  test("TRTLLM_DISAGG_WORKER_PROCESS_ID becomes the process id of the id layout", () => {
    expect(loadConfig(WORKERS, deps({ TRTLLM_DISAGG_WORKER_PROCESS_ID: "5" })).config.processId).toBe(5);
    expect(() => loadConfig(WORKERS, deps({ TRTLLM_DISAGG_WORKER_PROCESS_ID: "64" }))).toThrow("TRTLLM_DISAGG_WORKER_PROCESS_ID");
  });

  test("TRTLLM_KVCACHE_AWARE_ROUTER_HASH_TOKENS_PER_BLOCK sizes a kv_cache_aware router's blocks unless its YAML does", () => {
    const env = { TRTLLM_KVCACHE_AWARE_ROUTER_HASH_TOKENS_PER_BLOCK: "64" };
    const flagged = loadConfig({ ...WORKERS, generationRouter: "kv_cache_aware" }, deps(env)).config.routerOptions;
    expect(flagged.generation.tokensPerBlock).toBe(64);
    expect(flagged.context.tokensPerBlock).toBeUndefined();
    const yaml =
      "context_servers: { urls: [c:1] }\ngeneration_servers: { urls: [g:1], router: { type: kv_cache_aware, tokens_per_block: 16 } }\n";
    const fromFile = loadConfig({ configFile: "f.yaml" }, deps(env, { "f.yaml": yaml })).config.routerOptions;
    expect(fromFile.generation.tokensPerBlock).toBe(16);
  });

  test("TRTLLM_DISAGG_BENCHMARK_GEN_ONLY needs no context worker", () => {
    const config = loadConfig({ generationServers: ["http://g:1"] }, deps({ TRTLLM_DISAGG_BENCHMARK_GEN_ONLY: "1" })).config;
    expect(config.benchmarkGenerationOnly).toBe(true);
    expect(config.contextServers).toEqual([]);
  });
});
