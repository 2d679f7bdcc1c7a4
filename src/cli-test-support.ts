/** The command lines src/cli*.test.ts parse: a trtllm-serve YAML, file reads and env without the machine's. */

import { parseCommandLine, UsageError, type Command } from "./cli.ts";
import type { LoadDeps } from "./config/load.ts";

export const YAML = `
hostname: 0.0.0.0
port: 8000
backend: pytorch
context_servers: { num_instances: 1, urls: ["localhost:8001"] }
generation_servers: { num_instances: 1, urls: ["localhost:8003"] }
`;

export const DEPS: LoadDeps = {
  readFile: (path) => {
    if (path === "disagg.yaml") return YAML;
    if (path === "bad.yaml") return "port: abc";
    throw new Error(`ENOENT: no such file or directory, open '${path}'`);
  },
  env: {},
  defaultNodeId: () => 3,
};

export const WORKERS = ["--context", "c:1", "--generation", "g:1"];

export function parse(...argv: string[]): Command {
  return parseCommandLine(argv, DEPS);
}

export function serve(...argv: string[]): Extract<Command, { kind: "serve" }> {
  const command = parse(...argv);
  if (command.kind !== "serve") throw new Error(`expected serve, got ${command.kind}`);
  return command;
}

export function usageErrorOf(...argv: string[]): UsageError {
  try {
    parse(...argv);
  } catch (error) {
    if (error instanceof UsageError) return error;
    throw error;
  }
  throw new Error("expected a UsageError");
}
