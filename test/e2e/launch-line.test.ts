/**
 * `trtllm-serve disaggregated` command lines, as upstream's scripts and tests write them
 * (tensorrt_llm/commands/serve.py @ 00209af1 and newer), start the compiled binary unchanged.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEtcd } from "../support/etcd.ts";
import { BINARY, ensureBinary, spawnBinary, spawnBinaryWithLog, type Child } from "./binary-harness.ts";

const children: Child[] = [];

describe("the compiled binary takes trtllm-serve's launch line", () => {
  let dir = "";
  let yaml = "";

  beforeAll(async () => {
    await ensureBinary();
    const context = await spawnBinary(["worker", "--role", "context", "--port", "0"], children);
    const generation = await spawnBinary(["worker", "--role", "generation", "--port", "0"], children);
    dir = mkdtempSync(join(tmpdir(), "disagg-launch-"));
    yaml = join(dir, "disagg_config.yaml");
    // Upstream's own test config shape (tests/integration/defs/disaggregated/test_configs/disagg_config.yaml), worker keys included.
    writeFileSync(
      yaml,
      [
        "hostname: 127.0.0.1",
        "port: 0",
        "backend: pytorch",
        "model: TinyLlama/TinyLlama-1.1B-Chat-v1.0",
        "free_gpu_memory_fraction: 0.2",
        "context_servers:",
        "  num_instances: 1",
        "  tensor_parallel_size: 1",
        "  kv_cache_config: { free_gpu_memory_fraction: 0.2, enable_block_reuse: false }",
        "  cache_transceiver_config: { backend: DEFAULT }",
        `  urls: ["${context.url.replace("http://", "")}"]`,
        "generation_servers:",
        "  num_instances: 1",
        "  router: { type: load_balancing, use_tokens: true }",
        `  urls: ["${generation.url.replace("http://", "")}"]`,
        "",
      ].join("\n"),
    );
  }, 120_000);

  afterAll(() => {
    for (const child of children) child.kill("SIGKILL");
  });

  test.each([
    ["newest", ["disaggregated", "-c", "CONFIG", "-t", "60", "-r", "30", "-l", "info", "-s", "context_first"]],
    [
      "long",
      [
        "disaggregated",
        "--config",
        "CONFIG",
        "--server_start_timeout",
        "60",
        "--request_timeout",
        "30",
        "--log_level",
        "info",
        "--schedule_style",
        "CONTEXT_FIRST",
      ],
    ],
    [
      "older",
      [
        "disaggregated",
        "--config_file",
        "CONFIG",
        "--server_start_timeout",
        "60",
        "--request_timeout",
        "30",
        "--log_level",
        "verbose",
        "--metrics-log-interval",
        "0",
      ],
    ],
    ["with telemetry flags", ["disaggregated", "-c", "CONFIG", "--no-telemetry", "--metrics-log-interval", "0"]],
    ["ours", ["serve", "-c", "CONFIG", "--server-start-timeout", "60", "--request-timeout", "30", "--log-level", "info"]],
  ])(
    "the %s spelling starts, reports its address, serves, and warns about nothing",
    async (_name, words) => {
      const report = join(dir, `addr-${_name.replaceAll(" ", "-")}`);
      const args = [...words.map((word) => (word === "CONFIG" ? yaml : word)), "--report_addr", report];
      const proxy = await spawnBinaryWithLog(args, children);
      const lines = await proxy.log.until((line) => line.includes("all workers are ready"));
      expect(lines.filter((line) => line.includes(`"level":"warn"`) || line.includes(`"level":"error"`))).toEqual([]);
      expect(existsSync(report)).toBe(true);
      expect(readFileSync(report, "utf8")).toBe(`127.0.0.1:${new URL(proxy.url).port}`);
      const answer = await fetch(`${proxy.url}/v1/completions`, {
        method: "POST",
        body: JSON.stringify({ model: "m", prompt: "hi", max_tokens: 2 }),
      });
      expect(answer.status).toBe(200);
      proxy.child.kill("SIGTERM");
      expect(await proxy.child.exited).toBe(0);
    },
    30_000,
  );

  test("-m / --metadata_server_config_file starts with workers from etcd's metadata keys, and waits for them with one word on the example's spelling", async () => {
    await using etcd = await startEtcd();
    const { hostname, port } = new URL(etcd.endpoint);
    const meta = join(dir, "metadata_config.yaml");
    // Upstream's example spelling of the refresh key (examples/disaggregated/README.md).
    writeFileSync(meta, `server_type: etcd\nhostname: ${hostname}\nport: ${port}\nhealth_check_timeout: 5.0\nrefersh_interval: 10.0\n`);
    const bare = join(dir, "disagg_config_metadata.yaml");
    writeFileSync(
      bare,
      "hostname: 127.0.0.1\nport: 0\nbackend: pytorch\ncontext_servers:\n  num_instances: 1\ngeneration_servers:\n  num_instances: 1\n",
    );
    for (const flag of ["-m", "--metadata_server_config_file"]) {
      const proxy = await spawnBinaryWithLog(["disaggregated", "-c", bare, flag, meta, "-t", "60"], children);
      const lines = await proxy.log.until((line) => line.includes("waiting for workers"));
      // The one word said is about the example's spelling, which trtllm-serve itself refuses.
      const said = lines.filter((line) => line.includes(`"level":"warn"`) || line.includes(`"level":"error"`));
      expect(said).toHaveLength(1);
      expect(said[0]).toContain("refersh_interval is read as refresh_interval");
      expect((await fetch(`${proxy.url}/health`)).status).toBe(503);
      proxy.child.kill("SIGTERM");
      expect(await proxy.child.exited).toBe(0);
    }
  }, 30_000);

  test("SIGTERM during the start-up wait exits 0, saying it stopped before workers were ready", async () => {
    // A port nothing listens on: the workers never become ready.
    const idle = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    const unreachable = `127.0.0.1:${idle.port}`;
    idle.stop(true);
    const proxy = await spawnBinaryWithLog(
      ["disaggregated", "--port", "0", "--host", "127.0.0.1", "--context", unreachable, "--generation", unreachable, "-t", "600"],
      children,
    );
    await proxy.log.until((line) => line.includes("waiting for workers"));
    proxy.child.kill("SIGTERM");
    const rest = await proxy.log.until(() => false);
    expect(await proxy.child.exited).toBe(0);
    expect(rest.some((line) => line.includes("stopped before workers were ready"))).toBe(true);
    expect(rest.some((line) => line.includes("Timeout waiting"))).toBe(false);
  }, 30_000);

  test("a hostname that does not resolve exits 2 naming it and the setting that names it", () => {
    const run = Bun.spawnSync([
      BINARY,
      "disaggregated",
      "--host",
      "no-such-host.invalid",
      "--port",
      "8333",
      "--context",
      "c:1",
      "--generation",
      "g:1",
    ]);
    expect(run.exitCode).toBe(2);
    expect(run.stderr.toString()).toBe(
      "disagg-proxy: cannot resolve no-such-host.invalid (named by hostname (--host)): the name does not resolve (ENOTFOUND)\n",
    );
  });

  test("a port in use exits 2 naming it", () => {
    const busy = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
    try {
      const run = Bun.spawnSync([
        BINARY,
        "serve",
        "--host",
        "127.0.0.1",
        "--port",
        String(busy.port),
        "--context",
        "c:1",
        "--generation",
        "g:1",
      ]);
      expect(run.exitCode).toBe(2);
      expect(run.stderr.toString()).toStartWith(`disagg-proxy: cannot listen on 127.0.0.1:${busy.port}: the port is already in use`);
    } finally {
      busy.stop(true);
    }
  });
});
