import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import pkg from "../../package.json" with { type: "json" };
import { sourceCommit } from "../../scripts/build.ts";
import { BINARY, ensureBinary, spawnBinary, spawnBinaryWithLog, type Child } from "./binary-harness.ts";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";

const children: Child[] = [];
const spawn = (args: string[]): ReturnType<typeof spawnBinary> => spawnBinary(args, children);

const hostPort = (url: string): string => url.replace("http://", "");

describe("the compiled binary", () => {
  beforeAll(ensureBinary, 120_000);

  afterAll(() => {
    for (const child of children) child.kill("SIGKILL");
  });

  test("prints its version, the commit it was built from, its Bun and its compile target", () => {
    const run = Bun.spawnSync([BINARY, "--version"]);
    expect(run.exitCode).toBe(0);
    expect(run.stdout.toString()).toBe(
      `disagg-proxy ${pkg.version} (commit ${sourceCommit()}, bun ${Bun.version}, bun-linux-${process.arch})\n`,
    );
  });

  test("serves a disaggregated chat request from a TensorRT-LLM YAML config and stops cleanly on SIGTERM", async () => {
    const context = await spawn(["worker", "--role", "context", "--port", "0"]);
    const generation = await spawn(["worker", "--role", "generation", "--port", "0"]);
    const dir = mkdtempSync(join(tmpdir(), "disagg-proxy-"));
    const yaml = join(dir, "disagg_config.yaml");
    writeFileSync(
      yaml,
      [
        "hostname: 127.0.0.1",
        "port: 0",
        "backend: pytorch",
        "context_servers:",
        "  num_instances: 1",
        `  urls: ["${hostPort(context.url)}"]`,
        "generation_servers:",
        "  num_instances: 1",
        `  urls: ["${hostPort(generation.url)}"]`,
        "",
      ].join("\n"),
    );
    const proxy = await spawn(["serve", "-c", yaml, "--server-start-timeout", "10"]);
    let ready = false;
    for (let i = 0; i < 200 && !ready; i++) {
      ready = (await fetch(`${proxy.url}/health`)).status === 200;
      if (!ready) await Bun.sleep(25);
    }
    expect(ready).toBe(true);
    const response = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi from the binary" }], stream: true }),
    });
    expect(response.status).toBe(200);
    expect((await response.text()).trimEnd().endsWith("data: [DONE]")).toBe(true);
    // The dashboard's page script is a text import: the compiled binary carries it.
    const dashboard = await (await fetch(`${proxy.url}/dashboard`)).text();
    expect(dashboard).toContain('new EventSource("/dashboard/events")');
    proxy.child.kill("SIGTERM");
    expect(await proxy.child.exited).toBe(0);
  }, 30_000);

  test("a config key of the wrong type exits 2 with a message naming it and no stack", async () => {
    const dir = mkdtempSync(join(tmpdir(), "disagg-proxy-"));
    const yaml = join(dir, "bad.yaml");
    writeFileSync(yaml, 'port: not-a-port\ncontext_servers:\n  urls: ["a:1"]\ngeneration_servers:\n  urls: ["b:1"]\n');
    const run = Bun.spawnSync([BINARY, "serve", "-c", yaml]);
    expect(run.exitCode).toBe(2);
    const stderr = run.stderr.toString();
    expect(stderr).toContain("port");
    expect(stderr).not.toContain("    at ");
  });

  test("SIGTERM lets a 2 s stream finish, refuses new work and exits 0", async () => {
    const context = await spawn(["worker", "--role", "context", "--port", "0"]);
    const generation = await spawn(["worker", "--role", "generation", "--port", "0", "--token-ms", "200"]);
    const proxy = await spawnBinaryWithLog(
      ["serve", "--port", "0", "--host", "127.0.0.1", "--context", context.url, "--generation", generation.url],
      children,
    );
    await untilHealthy(proxy.url);
    const stream = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }], max_tokens: 11, stream: true }),
    });
    // The stream is under way once its first bytes are in; the rest takes about 2 s.
    const reader = stream.body!.getReader();
    const decoder = new TextDecoder();
    let body = "";
    const first = await reader.read();
    body += decoder.decode(first.value, { stream: true });
    proxy.child.kill("SIGTERM");
    // New work is refused once the proxy says it is draining.
    await proxy.log.until((line) => line.includes('"msg":"draining"'));
    void proxy.log.until(() => false);
    const refused = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }] }),
    });
    expect(refused.status).toBe(503);
    for (let read = await reader.read(); !read.done; read = await reader.read()) body += decoder.decode(read.value, { stream: true });
    expect(body.trimEnd().endsWith("data: [DONE]")).toBe(true);
    expect(await proxy.child.exited).toBe(0);
  }, 20_000);

  test("SIGHUP re-reads the config file's workers without breaking an open stream", async () => {
    const context = await spawn(["worker", "--role", "context", "--port", "0"]);
    const first = await spawn(["worker", "--role", "generation", "--port", "0", "--token-ms", "100"]);
    const second = await spawn(["worker", "--role", "generation", "--port", "0"]);
    const dir = mkdtempSync(join(tmpdir(), "disagg-proxy-"));
    const yaml = join(dir, "disagg_config.yaml");
    const write = (gen: string): void =>
      writeFileSync(
        yaml,
        `hostname: 127.0.0.1\nport: 0\ncontext_servers:\n  urls: ["${hostPort(context.url)}"]\ngeneration_servers:\n  urls: ["${hostPort(gen)}"]\n`,
      );
    write(first.url);
    const proxy = await spawn(["serve", "-c", yaml]);
    await untilHealthy(proxy.url);
    const stream = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }], max_tokens: 12, stream: true }),
    });
    const body = stream.text();
    write(second.url);
    proxy.child.kill("SIGHUP");
    let lists: { server_lists: { generation: string[] }; is_ready: boolean } | undefined;
    for (let i = 0; i < 200; i++) {
      lists = (await (await fetch(`${proxy.url}/cluster_info`)).json()) as typeof lists;
      if (lists?.server_lists.generation[0] === second.url && lists.is_ready) break;
      await Bun.sleep(20);
    }
    expect(lists?.server_lists.generation).toEqual([second.url]);
    const fresh = await fetch(`${proxy.url}/v1/chat/completions`, {
      method: "POST",
      body: JSON.stringify({ model: "m", messages: [{ role: "user", content: "x" }], max_tokens: 2 }),
    });
    expect(fresh.status).toBe(200);
    expect((await body).trimEnd().endsWith("data: [DONE]")).toBe(true);
  }, 20_000);
});

async function untilHealthy(url: string): Promise<void> {
  for (let i = 0; i < 400; i++) {
    if ((await fetch(`${url}/health`)).status === 200) return;
    await Bun.sleep(10);
  }
  throw new Error("proxy never became ready");
}
