/**
 * `disagg-proxy coordinator -c disagg_config.yaml` on the compiled binary: it starts from the
 * YAML a fleet of serving processes shares (upstream's docs, "Coordinator and Worker Fleet",
 * kv_cache_aware and conversation routers), waits for the workers, answers upstream's msgpack
 * /select and /finish, and stops on SIGTERM.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { existsSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { isMsgpackMap } from "../../src/json/msgpack-read.ts";
import { decodeWire, encodeFinishRequest, encodeSelectRequest } from "../../src/routing/coordinator-wire.ts";
import { ensureBinary, spawnBinary, spawnBinaryWithLog, type Child } from "./binary-harness.ts";

const children: Child[] = [];

async function msgpackOf(response: Response): Promise<Record<string, unknown>> {
  const read = decodeWire(await response.bytes());
  if (!read.ok || !isMsgpackMap(read.value)) throw new Error(`not a msgpack map (${response.status})`);
  return { ...read.value };
}

describe("the compiled binary runs the coordinator", () => {
  let yaml = "";
  let generations: string[] = [];

  beforeAll(async () => {
    await ensureBinary();
    const spawned = await Promise.all(
      ["context", "context", "generation", "generation"].map((role) => spawnBinary(["worker", "--role", role, "--port", "0"], children)),
    );
    const names = spawned.map((worker) => worker.url.replace("http://", ""));
    generations = names.slice(2);
    const dir = mkdtempSync(join(tmpdir(), "disagg-coordinator-"));
    yaml = join(dir, "disagg_config.yaml");
    writeFileSync(
      yaml,
      [
        "hostname: 127.0.0.1",
        "port: 0",
        "backend: pytorch",
        "context_servers:",
        "  num_instances: 2",
        `  urls: [${names
          .slice(0, 2)
          .map((name) => `"${name}"`)
          .join(", ")}]`,
        "  router:",
        "    type: kv_cache_aware",
        "generation_servers:",
        "  num_instances: 2",
        `  urls: [${generations.map((name) => `"${name}"`).join(", ")}]`,
        "  router:",
        "    type: conversation",
        "",
      ].join("\n"),
    );
  }, 180_000);

  afterAll(() => {
    for (const child of children) child.kill("SIGKILL");
  });

  test("it starts from the shared config, answers upstream's select and finish, and stops on SIGTERM", async () => {
    const coordinator = await spawnBinaryWithLog(["coordinator", "-c", yaml, "--log-level", "info"], children);
    const lines = await coordinator.log.until((line) => line.includes("all workers are ready"));
    expect(lines.filter((line) => line.includes(`"level":"warn"`) || line.includes(`"level":"error"`))).toEqual([]);
    expect((await fetch(`${coordinator.url}/health`)).status).toBe(200);
    const info = await msgpackOf(await fetch(`${coordinator.url}/cluster_info`));
    expect(info["is_ready"]).toBe(true);
    expect(info["server_lists"]).toMatchObject({ generation: generations });
    const post = (path: string, body: Uint8Array): Promise<Response> =>
      fetch(coordinator.url + path, { method: "POST", headers: { "content-type": "application/msgpack" }, body });
    const reqId = (1n << 40n) + 5n;
    const selected = await post(
      "/select",
      encodeSelectRequest({ role: "generation", routingKey: { kind: "conversation", id: "conv-binary" }, reqId, excludeServer: undefined }),
    );
    expect(selected.status).toBe(200);
    const answer = await msgpackOf(selected);
    const server = answer["server"];
    expect(generations).toContain(typeof server === "string" ? server : "");
    expect(answer["req_id"]).toBe(reqId);
    expect((await post("/finish", encodeFinishRequest({ role: "generation", reqId, success: true }))).status).toBe(200);
    coordinator.child.kill("SIGTERM");
    expect(await coordinator.child.exited).toBe(0);
  }, 30_000);

  test("killed (SIGKILL) with a unix: coordinator URL, it starts again on the socket file it left", async () => {
    const socket = join(mkdtempSync(join(tmpdir(), "disagg-coordinator-uds-")), "coordinator.sock");
    const udsYaml = `${yaml}.uds.yaml`;
    writeFileSync(udsYaml, `${readFileSync(yaml, "utf8")}disagg_coordinator_url: "unix:${socket}"\n`);
    const args = ["coordinator", "-c", udsYaml, "--port", "0", "--log-level", "info"];
    const first = await spawnBinaryWithLog(args, children);
    await first.log.until((line) => line.includes("all workers are ready"));
    first.child.kill("SIGKILL");
    await first.child.exited;
    expect(existsSync(socket)).toBe(true);
    const second = await spawnBinaryWithLog(args, children);
    const lines = await second.log.until((line) => line.includes("all workers are ready"));
    expect(lines.some((line) => line.includes("removed the socket file of a coordinator that did not stop"))).toBe(true);
    expect((await fetch("http://localhost/health", { unix: socket })).status).toBe(200);
    second.child.kill("SIGTERM");
    expect(await second.child.exited).toBe(0);
  }, 30_000);
});
