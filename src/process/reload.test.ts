import { describe, expect, test } from "bun:test";
import { DEFAULTS, type ProxyConfig } from "../config/types.ts";
import { needsRestart } from "./reload.ts";

const base: ProxyConfig = {
  ...DEFAULTS,
  contextServers: ["http://c:1"],
  generationServers: ["http://g:1"],
  nodeId: 3,
  configFile: "x.yaml",
};

describe("needsRestart", () => {
  test("names every changed setting but the worker lists, by its YAML name, sorted", () => {
    const next: ProxyConfig = { ...base, port: 9000, numWorkers: 4, contextRouter: "load_balancing", contextServers: ["http://c:2"] };
    expect(needsRestart(base, next)).toEqual(["context_router", "num_workers", "port"]);
  });

  test("nothing changed, or only the worker lists: nothing needs a restart", () => {
    expect(needsRestart(base, { ...base })).toEqual([]);
    expect(needsRestart(base, { ...base, generationServers: ["http://g:2", "http://g:3"] })).toEqual([]);
  });
});
