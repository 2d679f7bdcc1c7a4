/**
 * The compiled binary as upstream's fleet: `disagg-proxy coordinator` and serving processes with
 * `disagg_coordinator_url`, from upstream's own example config (docs/source/features/
 * disagg-serving.md, "Example: external coordinator" [id 57366621073]).
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { ensureBinary, spawnBinary, spawnBinaryWithLog, type Child } from "./binary-harness.ts";
import { eventually } from "../support/wait.ts";

const children: Child[] = [];
const hostPort = (url: string): string => url.replace("http://", "");

/** Upstream's external-coordinator example, its hosts and ports replaced by the test's. */
function upstreamFleetConfig(
  coordinator: string | undefined,
  context: readonly string[],
  generation: readonly string[],
  numWorkers = 4,
): string {
  return [
    "hostname: 127.0.0.1",
    "port: 8000",
    "backend: pytorch",
    `num_workers: ${numWorkers}`,
    ...(coordinator === undefined ? [] : [`disagg_coordinator_url: "${coordinator}"`]),
    "context_servers:",
    `  num_instances: ${context.length}`,
    "  urls:",
    ...context.map((url) => `      - "${hostPort(url)}"`),
    "  router:",
    "    type: kv_cache_aware",
    "generation_servers:",
    `  num_instances: ${generation.length}`,
    "  urls:",
    ...generation.map((url) => `      - "${hostPort(url)}"`),
    "  router:",
    "    type: kv_cache_aware",
    "",
  ].join("\n");
}

/** A child's log lines, kept as they come (JSON lines parsed). */
function collect(log: { until(done: (line: string) => boolean): Promise<string[]> }): Record<string, unknown>[] {
  const lines: Record<string, unknown>[] = [];
  void log.until((line) => {
    if (line.startsWith("{")) lines.push(JSON.parse(line) as Record<string, unknown>);
    return false;
  });
  return lines;
}

function saysBack(lines: readonly Record<string, unknown>[]): boolean {
  return lines.some((line) => String(line["msg"]).startsWith("coordinator answers again"));
}

async function ready(url: string): Promise<void> {
  await eventually(async () => (await fetch(`${url}/health`).catch(() => undefined))?.status === 200, 15_000, `${url} ready`);
}

function chat(conversation: string): RequestInit {
  return {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      model: "emulated-model",
      messages: [{ role: "user", content: `hello ${conversation}` }],
      max_tokens: 4,
      conversation_params: { conversation_id: conversation },
    }),
  };
}

describe("the binary as upstream's coordinator fleet", () => {
  beforeAll(ensureBinary, 180_000);

  afterAll(() => {
    for (const child of children) child.kill("SIGKILL");
  });

  test("upstream's external-coordinator config starts and serves, every leg placed by `disagg-proxy coordinator`", async () => {
    const workers = await Promise.all(
      [
        ["context", "0"],
        ["context", "0"],
        ["generation", "0"],
      ].map(([role, port]) => spawnBinary(["worker", "--role", role ?? "", "--port", port ?? "0"], children)),
    );
    const [context0, context1, generation0] = workers.map((w) => w.url);
    if (context0 === undefined || context1 === undefined || generation0 === undefined) throw new Error("workers");
    const dir = mkdtempSync(join(tmpdir(), "disagg-fleet-"));
    const coordinatorYaml = join(dir, "coordinator.yaml");
    writeFileSync(coordinatorYaml, upstreamFleetConfig(undefined, [context0, context1], [generation0]));
    const coordinator = await spawnBinary(["coordinator", "-c", coordinatorYaml, "--host", "127.0.0.1", "--port", "0"], children);
    await ready(coordinator.url);
    const fleetYaml = join(dir, "disagg_config.yaml");
    writeFileSync(fleetYaml, upstreamFleetConfig(coordinator.url, [context0, context1], [generation0]));
    const serving = await spawnBinaryWithLog(["serve", "-c", fleetYaml, "--port", "0"], children);
    const lines = collect(serving.log);
    await ready(serving.url);
    // Each extra loop joins the port once its own health checks found the workers: before that a
    // worker the coordinator names may not be in that loop's rotation yet (placed locally, warned).
    await eventually(() => lines.filter((line) => line["msg"] === "event loop listening").length === 3, 15_000, "four event loops");
    for (let i = 0; i < 4; i++) {
      const response = await fetch(`${serving.url}/v1/chat/completions`, chat(`docs-${i % 2}`));
      expect(response.status).toBe(200);
      await response.text();
    }
    await eventually(() => lines.filter((line) => line["msg"] === "request").length === 4, 5000, "four request lines");
    expect(lines.filter((line) => line["msg"] === "request").map((line) => line["placed_by"])).toEqual(Array(4).fill("coordinator"));
    // num_workers: 4 with kv_cache_aware runs its four event loops: the routers' state is the coordinator's.
    expect(lines.some((line) => String(line["msg"]).includes("is not honoured"))).toBe(false);
  }, 60_000);

  test("a coordinator killed (SIGKILL) mid-load costs no client error; the replicas fall back and return when it is started again", async () => {
    const workers = await Promise.all(
      ["context", "context", "generation", "generation"].map((role) =>
        spawnBinary(["worker", "--role", role, "--port", "0", "--token-ms", "2"], children),
      ),
    );
    const urls = workers.map((w) => w.url);
    const dir = mkdtempSync(join(tmpdir(), "disagg-fleet-"));
    const yaml = join(dir, "coordinator.yaml");
    // One event loop per replica: fewer threads on the shared test machine.
    writeFileSync(yaml, upstreamFleetConfig(undefined, urls.slice(0, 2), urls.slice(2), 1));
    const first = await spawnBinary(["coordinator", "-c", yaml, "--host", "127.0.0.1", "--port", "0"], children);
    await ready(first.url);
    const port = new URL(first.url).port;
    const replicas = await Promise.all(
      ["127.0.0.2", "127.0.0.3"].map((host, i) =>
        spawnBinaryWithLog(
          [
            "serve",
            "-c",
            yaml,
            "--host",
            host,
            "--port",
            "0",
            "--node-id",
            String(20 + i),
            "--disagg-coordinator-url",
            first.url,
            "--coordinator-timeout-ms",
            "300",
          ],
          children,
        ),
      ),
    );
    const logs = replicas.map((replica) => collect(replica.log));
    await Promise.all(replicas.map((replica) => ready(replica.url)));
    const failures: string[] = [];
    let answered = 0;
    const load = { stop: false };
    const client = async (id: number): Promise<void> => {
      for (let i = 0; !load.stop; i++) {
        const replica = replicas[(id + i) % replicas.length];
        if (replica === undefined) return;
        const response = await fetch(`${replica.url}/v1/chat/completions`, chat(`kill-${id}-${i % 4}`)).catch((error: unknown) => error);
        if (!(response instanceof Response)) failures.push(String(response));
        else if (response.status !== 200) failures.push(`HTTP ${response.status}: ${await response.text()}`);
        else {
          await response.text();
          answered++;
        }
      }
    };
    const clients = Array.from({ length: 6 }, (_, id) => client(id));
    await eventually(() => answered >= 40, 15_000, "load through the coordinator");
    first.child.kill("SIGKILL");
    await first.child.exited;
    const atKill = answered;
    await eventually(() => answered >= atKill + 40, 15_000, "load on the local routers");
    // On a fixed port the first line is the log's, not the URL (that is printed for --port 0 only).
    await spawnBinary(["coordinator", "-c", yaml, "--host", "127.0.0.1", "--port", port], children);
    await ready(first.url);
    await eventually(() => logs.every(saysBack), 10_000, "both replicas back on the coordinator");
    const atReturn = answered;
    await eventually(() => answered >= atReturn + 40, 15_000, "load through the restarted coordinator");
    load.stop = true;
    await Promise.all(clients);
    expect(failures).toEqual([]);
    expect(logs.map((lines) => lines.filter((line) => String(line["msg"]).startsWith("coordinator unreachable")).length)).toEqual([1, 1]);
    const placed = logs.map((lines) => lines.filter((line) => line["msg"] === "request").map((line) => line["placed_by"]));
    for (const byReplica of placed) {
      expect(byReplica).toContain("local");
      expect(byReplica.at(-1)).toBe("coordinator");
    }
  }, 90_000);
});
