import { describe, expect, test } from "bun:test";
import { ConfigError } from "./errors.ts";
import { loadConfig, type LoadDeps } from "./load.ts";

function deps(text: string): LoadDeps {
  return { readFile: () => text, env: {}, defaultNodeId: () => 1 };
}

function yamlWithAliases(aliases: string): string {
  return `context_servers:\n  urls: [c:1]\ngeneration_servers:\n  urls: [g:1]\nmodel_aliases: ${aliases}\n`;
}

const WORKERS = { contextServers: ["http://c:1"], generationServers: ["http://g:1"] };

describe("model aliases", () => {
  test("--model-alias and the YAML's model_aliases combine, the flags' first (so theirs win)", () => {
    const yaml =
      "context_servers:\n  urls: [c:1]\ngeneration_servers:\n  urls: [g:1]\nmodel_aliases:\n  gpt-4o: llama-70b\n  'claude-*': qwen-32b\n";
    const { config } = loadConfig({ configFile: "x.yaml", modelAlias: ["gpt-4o=qwen-32b", " o3 = llama-70b "] }, deps(yaml));
    expect(config.modelAliases).toEqual([
      { from: "gpt-4o", to: "qwen-32b" },
      { from: "o3", to: "llama-70b" },
      { from: "gpt-4o", to: "llama-70b" },
      { from: "claude-*", to: "qwen-32b" },
    ]);
  });

  test("an alias without `=`, with `*` inside its name or its target, or empty, stops the start naming the flag", () => {
    for (const bad of ["gpt-4o", "=x", "a*b=x", "a=b*", "*=x", "a="]) {
      expect(() => loadConfig({ ...WORKERS, modelAlias: [bad] }, deps(""))).toThrow(ConfigError);
    }
    expect(() => loadConfig({ ...WORKERS, modelAlias: ["a*b=x"] }, deps(""))).toThrow("--model-alias");
  });

  test("model_aliases must map names to strings", () => {
    expect(() => loadConfig({ configFile: "x.yaml" }, deps(yamlWithAliases("[a, b]")))).toThrow("model_aliases");
    expect(() => loadConfig({ configFile: "x.yaml" }, deps(yamlWithAliases("{a: 3}")))).toThrow("model_aliases.a");
  });
});
