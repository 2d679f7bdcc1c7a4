/**
 * The small things an operator meets on day one: a metadata file's misspelt refresh_interval is
 * warned of, an unreachable OTLP collector's warning carries no stack, and the request trace's
 * lines are counted by a counter. On the compiled binary.
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

const chat = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hello" }], max_tokens: 2 });

async function workers(): Promise<string[]> {
  const context = await spawnBinary(["worker", "--role", "context", "--port", "0"], children);
  const generation = await spawnBinary(["worker", "--role", "generation", "--port", "0"], children);
  return ["--context", context.url, "--generation", generation.url];
}

describe("day-one details", () => {
  beforeAll(() => ensureBinary(), 120_000);

  test("a metadata file's refersh_interval is read, with a start-up warning naming the right spelling", async () => {
    const dir = temp.dir("small-claims-");
    const meta = join(dir, "metadata_config.yaml");
    writeFileSync(meta, `server_type: etcd\nhostname: 127.0.0.1\nport: ${freePort()}\nrefersh_interval: 1\n`);
    const { log } = await spawnBinaryWithLog(["serve", "--port", "0", "--host", "127.0.0.1", "-m", meta, ...(await workers())], children);
    const lines = await log.until((line) => line.includes("refersh_interval"));
    expect(JSON.parse(lines.at(-1)!)).toMatchObject({
      level: "warn",
      msg: `${meta}: refersh_interval is read as refresh_interval (trtllm-serve refuses this spelling: write refresh_interval)`,
    });
  }, 30_000);

  test("an unreachable OTLP collector is warned of without a stack; the request trace's lines are a counter", async () => {
    const dir = temp.dir("small-claims-");
    const config = join(dir, "disagg_config.yaml");
    writeFileSync(config, `otlp_config:\n  otlp_traces_endpoint: http://127.0.0.1:${freePort()}/v1/traces\n`);
    const env = { ...process.env, TRTLLM_REQUEST_TRACE_DIR: join(dir, "trace") };
    const { url, log } = await spawnBinaryWithLog(
      ["serve", "--port", "0", "--host", "127.0.0.1", "-c", config, ...(await workers())],
      children,
      env,
    );
    await log.until((line) => line.includes('"all workers are ready"'));
    await (
      await fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: chat })
    ).text();
    const lines = await log.until((line) => line.includes('"msg":"span export failed"'));
    const warning = lines.at(-1)!;
    expect(JSON.parse(warning)).toMatchObject({ level: "warn", msg: "span export failed" });
    expect(warning).not.toContain('"stack"');
    const metrics = await (await fetch(`${url}/prometheus/metrics`)).text();
    expect(metrics).toContain("# TYPE disagg_proxy_request_trace_lines_total counter");
    expect(metrics).toContain("# TYPE disagg_proxy_request_trace_lines_pending gauge");
  }, 60_000);
});
