/**
 * Upstream's newer router types on the compiled binary, from a TensorRT-LLM YAML config:
 * `remote_http` places by a stand-in for upstream's router HTTP server, and
 * `centralized_kv_cache_aware` starts (as kv_cache_aware, with one warning) and serves.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBinary, spawnBinary, spawnBinaryWithLog, type Child } from "./binary-harness.ts";

const children: Child[] = [];
const hostPort = (url: string): string => url.replace("http://", "");

describe("the compiled binary with upstream's newer router types", () => {
  beforeAll(ensureBinary, 120_000);

  afterAll(() => {
    for (const child of children) child.kill("SIGKILL");
  });

  test("remote_http places each context leg by the router server, centralized_kv_cache_aware serves the generation legs", async () => {
    const context = await spawnBinary(["worker", "--role", "context", "--port", "0"], children);
    const generation = await spawnBinary(["worker", "--role", "generation", "--port", "0"], children);
    const asked: Record<string, unknown>[] = [];
    using router = Bun.serve({
      port: 0,
      hostname: "127.0.0.1",
      async fetch(request) {
        asked.push((await request.json()) as Record<string, unknown>);
        return Response.json({ server: hostPort(context.url), matched_blocks: 0, route_hint: { dp_rank: 0 } });
      },
    });
    const dir = mkdtempSync(join(tmpdir(), "disagg-proxy-routers-"));
    const yaml = join(dir, "disagg_config.yaml");
    writeFileSync(
      yaml,
      [
        "hostname: 127.0.0.1",
        "port: 0",
        "context_servers:",
        `  urls: ["${hostPort(context.url)}"]`,
        `  router: { type: remote_http, remote_url: "http://127.0.0.1:${router.port}", request_timeout_s: 5 }`,
        "generation_servers:",
        `  urls: ["${hostPort(generation.url)}"]`,
        "  router: { type: centralized_kv_cache_aware, router_port: 5557 }",
        "",
      ].join("\n"),
    );
    const proxy = await spawnBinaryWithLog(["serve", "-c", yaml, "--server-start-timeout", "10"], children);
    const warned = await proxy.log.until((line) => line.includes("centralized_kv_cache_aware runs as kv_cache_aware"));
    expect(warned.at(-1)).toContain('"level":"warn"');
    void proxy.log.until(() => false);
    let ready = false;
    for (let i = 0; i < 200 && !ready; i++) {
      ready = (await fetch(`${proxy.url}/health`)).status === 200;
      if (!ready) await Bun.sleep(25);
    }
    expect(ready).toBe(true);
    for (const stream of [false, true]) {
      const response = await fetch(`${proxy.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ model: "m", messages: [{ role: "user", content: `routed ${stream}` }], max_tokens: 3, stream }),
      });
      expect(response.status).toBe(200);
      await response.text();
    }
    expect(asked.map((body) => (body["messages"] as { content: string }[])[0]?.content)).toEqual(["routed false", "routed true"]);
  }, 30_000);
});
