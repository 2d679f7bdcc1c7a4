import { describe, expect, test } from "bun:test";
import { parseTrtllmYaml } from "../../src/config/trtllm-yaml.ts";
import { disaggConfig, type FleetSpec } from "./fleet.ts";
import type { Service } from "./service.ts";

function services(role: string, ports: readonly number[]): Service[] {
  return ports.map((port, i) => ({
    name: `${role}${i}`,
    pid: 0,
    url: `http://127.0.0.1:${port}`,
    logFile: "",
    stop: () => Promise.resolve(),
  }));
}

const SPEC: FleetSpec = {
  name: "t",
  binary: "disagg-proxy",
  logDir: "/tmp",
  contextWorkers: 2,
  generationWorkers: 2,
  workerFlags: [],
  contextRouter: "kv_cache_aware",
  generationRouter: "conversation",
  tokensPerBlock: 16,
  maxLocalPrefillLength: 512,
  maxHttpRequests: 4096,
};

describe("the disagg_config.yaml the conversations benchmark writes", () => {
  test("the proxy reads its workers, routers, block size and conditional limit, and nothing it does not implement", () => {
    const yaml = disaggConfig(SPEC, services("ctx", [9001, 9002]), services("gen", [9003, 9004]));
    const { settings, unknown } = parseTrtllmYaml(yaml, "conversations.yaml");
    expect(unknown).toEqual([]);
    expect(settings.contextServers).toEqual(["http://127.0.0.1:9001", "http://127.0.0.1:9002"]);
    expect(settings.generationServers).toEqual(["http://127.0.0.1:9003", "http://127.0.0.1:9004"]);
    expect([settings.contextRouter, settings.generationRouter]).toEqual(["kv_cache_aware", "conversation"]);
    expect(settings.routerOptions).toEqual({ context: { tokensPerBlock: 16 }, generation: { tokensPerBlock: 16 } });
    expect(settings.conditionalDisagg).toEqual({ maxLocalPrefillLength: 512 });
  });

  test("round_robin sections carry no block size, and no limit means no conditional_disagg_config", () => {
    const spec = { ...SPEC, contextRouter: "round_robin", generationRouter: "round_robin", maxLocalPrefillLength: undefined } as const;
    const { settings, unknown } = parseTrtllmYaml(disaggConfig(spec, services("ctx", [9001]), services("gen", [9003])), "rr.yaml");
    expect(unknown).toEqual([]);
    expect([settings.contextRouter, settings.generationRouter]).toEqual(["round_robin", "round_robin"]);
    expect(settings.routerOptions).toBeUndefined();
    expect(settings.conditionalDisagg).toBeUndefined();
  });
});
