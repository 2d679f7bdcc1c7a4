/**
 * SIGHUP writes one line per reload: what it applied, what needs a restart, what it refused and
 * why, with start-up's unknown-key warnings; never a stack. On the compiled binary.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { writeFileSync } from "node:fs";
import { join } from "node:path";
import { freePort } from "../support/etcd.ts";
import { scratch } from "../support/scratch.ts";
import { ensureBinary, spawnBinary, spawnBinaryWithLog, type Child } from "./binary-harness.ts";

const children: Child[] = [];
const temp = scratch();

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
  temp.removeAll();
});

const hostPort = (url: string): string => url.replace("http://", "");

function yaml(port: number, context: string[], generation: string, extra: string[] = [], instances = context.length): string {
  return [
    "hostname: 127.0.0.1",
    `port: ${port}`,
    ...extra,
    "context_servers:",
    `  num_instances: ${instances}`,
    `  urls: [${context.map((url) => `"${hostPort(url)}"`).join(", ")}]`,
    "generation_servers:",
    "  num_instances: 1",
    `  urls: ["${hostPort(generation)}"]`,
    "",
  ].join("\n");
}

describe("SIGHUP's line", () => {
  beforeAll(() => ensureBinary(), 120_000);

  test("names what was applied, what needs a restart, the typo's warning, and a refusal's exact fix without a stack", async () => {
    const contexts = [
      await spawnBinary(["worker", "--role", "context", "--port", "0"], children),
      await spawnBinary(["worker", "--role", "context", "--port", "0"], children),
      await spawnBinary(["worker", "--role", "context", "--port", "0"], children),
    ];
    const generation = await spawnBinary(["worker", "--role", "generation", "--port", "0"], children);
    const dir = temp.dir("reload-lines-");
    const file = join(dir, "disagg_config.yaml");
    const port = freePort();
    writeFileSync(file, yaml(port, [contexts[0]!.url], generation.url));
    const { child, log } = await spawnBinaryWithLog(["serve", "-c", file, "--runtime-dir", dir], children);
    await log.until((line) => line.includes('"all workers are ready"'));
    const reloaded = async (): Promise<Record<string, unknown>> => {
      child.kill("SIGHUP");
      const lines = await log.until((line) => line.includes('"msg":"reload'));
      return JSON.parse(lines.at(-1)!) as Record<string, unknown>;
    };

    // A second context worker (num_instances raised), another port, a typo.
    writeFileSync(file, yaml(port + 1, [contexts[0]!.url, contexts[1]!.url], generation.url, ["max_retires: 3"]));
    const first = await reloaded();
    expect(first).toMatchObject({
      level: "warn",
      msg: "reloaded",
      applied: `context_servers +${contexts[1]!.url}`,
      needs_restart: "port",
      warnings: expect.stringContaining("max_retires"),
    });

    // A third URL without raising num_instances: refused, saying which number to write.
    writeFileSync(file, yaml(port, [contexts[0]!.url, contexts[1]!.url, contexts[2]!.url], generation.url, [], 2));
    const second = await reloaded();
    expect(second).toEqual({
      ts: expect.any(String),
      level: "error",
      msg: "reload refused: keeping the running configuration",
      refused:
        "Invalid config: context_servers.num_instances is 2 but context_servers.urls lists 3: set context_servers.num_instances to 3 (or remove it)",
    });

    // The same file with num_instances raised: applied; nothing else changed.
    writeFileSync(file, yaml(port, [contexts[0]!.url, contexts[1]!.url, contexts[2]!.url], generation.url));
    expect(await reloaded()).toMatchObject({ level: "info", msg: "reloaded", applied: `context_servers +${contexts[2]!.url}` });
    expect(JSON.stringify([first, second])).not.toContain("    at ");
  }, 60_000);
});
