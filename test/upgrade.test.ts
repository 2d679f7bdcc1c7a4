/**
 * Upgrading a running proxy without a refused connection (docs/upgrading.md): the port's
 * control socket refuses a second copy, `--take-over` replaces the running process under load,
 * registered workers come along, and a take-over that cannot get ready leaves the old one alone.
 * Proxies run from source as separate processes on a free port; workers are emulated here.
 */

import { afterAll, describe, expect, test } from "bun:test";
import { existsSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { runUpgrades, problems } from "../bench/upgrade/upgrade-run.ts";
import { ProxyProcess } from "../bench/upgrade/proxy-process.ts";
import { LOOP_KINDS } from "../bench/upgrade/client-loops.ts";
import { httpRegistrar } from "../src/discovery/index.ts";
import { connectControlSocket, type ControlRequest } from "../src/process/control-socket.ts";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import type { EmulatedWorker } from "../src/emulator/types.ts";
import { silentLogger } from "../src/observability/logger.ts";
import { freePort } from "./support/etcd.ts";
import { notifySocket } from "./support/notify-socket.ts";
import { scratch } from "./support/scratch.ts";
import { eventually } from "./support/wait.ts";

const MAIN = join(import.meta.dir, "..", "src", "main.ts");
const COMMAND = [process.execPath, MAIN];
const temp = scratch();
const processes: ProxyProcess[] = [];
const workers: EmulatedWorker[] = [];

afterAll(async () => {
  for (const proxy of processes) if (proxy.child.exitCode === null) proxy.child.kill("SIGKILL");
  await Promise.all(workers.map((worker) => worker.stop()));
  temp.removeAll();
});

function spawnProxy(dir: string, args: string[], name: string, env?: Record<string, string | undefined>): ProxyProcess {
  const proxy = new ProxyProcess(COMMAND, ["serve", "--host", "127.0.0.1", "--runtime-dir", dir, ...args], join(dir, `${name}.log`), env);
  processes.push(proxy);
  return proxy;
}

function emulatedPair(): { context: EmulatedWorker; generation: EmulatedWorker } {
  const context = startEmulatedWorker({ role: "context" });
  const generation = startEmulatedWorker({ role: "generation" });
  workers.push(context, generation);
  return { context, generation };
}

const isListening = (record: Readonly<Record<string, unknown>>): boolean => record["msg"] === "listening";
const chat = { model: "m", messages: [{ role: "user", content: "hello" }], max_tokens: 2 };

/** Which process answers a new connection (the dashboard shows its pid). */
async function servingPid(port: number): Promise<number> {
  const response = await fetch(`http://127.0.0.1:${port}/dashboard/data`, { headers: { connection: "close" } });
  return ((await response.json()) as { proxy: { pid: number } }).proxy.pid;
}

describe("upgrading a running proxy (--take-over)", () => {
  test("three upgrades in a row under 40 requests/s, new and kept-alive connections, streamed and not: none refused, reset or failed; each stream opened before an upgrade arrives byte for byte; the new process answers within a second of the old one stopping listening", async () => {
    const report = await runUpgrades({
      upgrades: 3,
      streamSeconds: 5,
      gapMs: 300,
      ratePerLoop: 10,
      command: COMMAND,
      workDir: temp.dir("upgrade-run-"),
    });
    // One comparison, so that a failure shows every figure of the run.
    expect({
      missed: problems(report),
      atLeast20PerSecond: report.requestsPerSecond >= 20,
      everyKindServed: LOOP_KINDS.every((kind) => report.loops.byKind[kind].ok > 10),
      // Each long stream was in flight on the old process when it stopped listening (a take-over takes 1.5–3 s here).
      streamInFlightAtEachStop: report.upgrades.map((upgrade) => upgrade.inFlightAtStop >= 1),
      streamsRanSeconds: report.longStreams.map((stream) => stream.seconds >= 4),
      newProcesses: new Set(report.upgrades.map((upgrade) => upgrade.toPid)).size,
      oldExitCodes: report.oldExitCodes,
    }).toEqual({
      missed: [],
      atLeast20PerSecond: true,
      everyKindServed: true,
      streamInFlightAtEachStop: [true, true, true],
      streamsRanSeconds: [true, true, true],
      newProcesses: 3,
      oldExitCodes: [0, 0, 0],
    });
  }, 90_000);

  test("a second copy started on a held port is refused before it listens, naming the running one and --take-over; a killed proxy's socket does not block the next start", async () => {
    const dir = temp.dir("upgrade-refuse-");
    const port = freePort();
    const { context, generation } = emulatedPair();
    const args = ["--port", String(port), "--context", context.url, "--generation", generation.url];
    const first = spawnProxy(dir, args, "first");
    await first.waitFor(isListening, 20_000, "listening");
    const second = spawnProxy(dir, args, "second");
    expect(await second.child.exited).toBe(2);
    expect(second.stderr).toContain(`port ${port} is already served by disagg-proxy `);
    expect(second.stderr).toContain(`(pid ${first.pid}, started `);
    expect(second.stderr).toContain("start this one with --take-over");
    expect(second.records.some(isListening)).toBe(false);
    expect(await servingPid(port)).toBe(first.pid);

    first.child.kill("SIGKILL");
    await first.child.exited;
    expect(existsSync(join(dir, `disagg-proxy-${port}.sock`))).toBe(true);
    const third = spawnProxy(dir, args, "third");
    await third.waitFor(isListening, 20_000, "listening");
    expect(await servingPid(port)).toBe(third.pid);
    third.child.kill("SIGTERM");
    expect(await third.child.exited).toBe(0);
  }, 60_000);

  test("two take-overs started at once: one serves the port and holds its control socket; the other stops listening, drains and exits 1, so no process is left serving that a later take-over cannot replace", async () => {
    const dir = temp.dir("upgrade-race-");
    const port = freePort();
    const { context, generation } = emulatedPair();
    const args = ["--port", String(port), "--context", context.url, "--generation", generation.url];
    const old = spawnProxy(dir, args, "old");
    await old.waitFor(isListening, 20_000, "listening");
    const a = spawnProxy(dir, [...args, "--take-over"], "a");
    const b = spawnProxy(dir, [...args, "--take-over"], "b");
    const oneLeft = await Promise.race([
      a.child.exited.then((): [ProxyProcess, ProxyProcess] => [a, b]),
      b.child.exited.then((): [ProxyProcess, ProxyProcess] => [b, a]),
      Bun.sleep(30_000).then(() => undefined),
    ]);
    expect(oneLeft).toBeDefined();
    const [loser, winner] = oneLeft ?? [a, b];
    expect(loser.child.exitCode).toBe(1);
    expect(loser.records.some((record) => String(record["msg"]).startsWith("another process took the port over first"))).toBe(true);
    await winner.waitFor((record) => record["msg"] === "took over the port", 20_000, "took over");
    expect(await old.child.exited).toBe(0);
    for (let i = 0; i < 8; i++) expect(await servingPid(port)).toBe(winner.pid);
    const again = spawnProxy(dir, args, "again");
    expect(await again.child.exited).toBe(2);
    expect(again.stderr).toContain(`(pid ${winner.pid}, started `);
    winner.child.kill("SIGTERM");
    expect(await winner.child.exited).toBe(0);
  }, 90_000);

  test("a release that names no other process listening on the port (none named, the proxy itself, a process not listening) is refused: the proxy serves on, and a take-over still replaces it", async () => {
    const dir = temp.dir("upgrade-stray-release-");
    const port = freePort();
    const { context, generation } = emulatedPair();
    const args = ["--port", String(port), "--context", context.url, "--generation", generation.url];
    const old = spawnProxy(dir, args, "old");
    await old.waitFor(isListening, 20_000, "listening");
    const requests: ControlRequest[] = [{ op: "release" }, { op: "release", pid: old.pid }, { op: "release", pid: process.pid }];
    for (const request of requests) {
      const control = await connectControlSocket(join(dir, `disagg-proxy-${port}.sock`));
      const reply = await control?.request(request, 5000);
      control?.close();
      expect(String(reply?.["error"])).toStartWith("no successor listening: ");
    }
    expect(old.records.some((record) => String(record["msg"]).startsWith("stopped listening"))).toBe(false);
    expect(await servingPid(port)).toBe(old.pid);
    const next = spawnProxy(dir, [...args, "--take-over"], "new");
    await next.waitFor((record) => record["msg"] === "took over the port", 20_000, "took over");
    expect(await old.child.exited).toBe(0);
    expect(await servingPid(port)).toBe(next.pid);
    next.child.kill("SIGTERM");
    expect(await next.child.exited).toBe(0);
  }, 60_000);

  test("a take-over on an address that does not take every connection of the running one's (127.0.0.2 for 127.0.0.1) is refused before it listens, and the running one serves on", async () => {
    const dir = temp.dir("upgrade-narrower-");
    const port = freePort();
    const { context, generation } = emulatedPair();
    const args = ["--port", String(port), "--context", context.url, "--generation", generation.url];
    const old = spawnProxy(dir, args, "old");
    await old.waitFor(isListening, 20_000, "listening");
    const narrower = spawnProxy(dir, [...args, "--host", "127.0.0.2", "--take-over"], "narrower");
    expect(await narrower.child.exited).toBe(2);
    expect(narrower.stderr).toContain(`port ${port} is served on 127.0.0.1 by disagg-proxy `);
    expect(narrower.stderr).toContain("this one would listen on 127.0.0.2");
    expect(narrower.records.some(isListening)).toBe(false);
    expect(await servingPid(port)).toBe(old.pid);
    const same = spawnProxy(dir, [...args, "--take-over"], "same");
    await same.waitFor((record) => record["msg"] === "took over the port", 20_000, "took over");
    expect(await old.child.exited).toBe(0);
    expect(await servingPid(port)).toBe(same.pid);
    same.child.kill("SIGTERM");
    expect(await same.child.exited).toBe(0);
  }, 60_000);

  test("a second copy whose runtime directory differs (another environment) finds the port's listener and is refused before it listens, with or without --take-over", async () => {
    const port = freePort();
    const { context, generation } = emulatedPair();
    const args = ["--port", String(port), "--context", context.url, "--generation", generation.url];
    const first = spawnProxy(temp.dir("upgrade-dir-a-"), args, "first");
    await first.waitFor(isListening, 20_000, "listening");
    for (const extra of [[], ["--take-over"]]) {
      const elsewhere = temp.dir("upgrade-dir-b-");
      const second = spawnProxy(elsewhere, [...args, ...extra], "second");
      expect(await second.child.exited).toBe(2);
      expect(second.stderr).toContain(
        `cannot listen on 127.0.0.1:${port}: the port is already in use, by a process that holds no control socket in ${elsewhere}`,
      );
      expect(second.records.some(isListening)).toBe(false);
      expect(existsSync(join(elsewhere, `disagg-proxy-${port}.sock`))).toBe(false);
    }
    for (let i = 0; i < 4; i++) expect(await servingPid(port)).toBe(first.pid);
    first.child.kill("SIGTERM");
    expect(await first.child.exited).toBe(0);
  }, 60_000);

  test("workers registered in the proxy's HTTP cluster storage are handed to the new process: it routes to them at once, though none has registered with it", async () => {
    const dir = temp.dir("upgrade-registrations-");
    const port = freePort();
    const config = join(dir, "disagg_config.yaml");
    writeFileSync(
      config,
      `hostname: 127.0.0.1\nport: ${port}\ndisagg_cluster:\n  cluster_uri: http://127.0.0.1:${port}\n  cluster_name: upgrade\n`,
    );
    const old = spawnProxy(dir, ["-c", config], "old");
    await old.waitFor(isListening, 20_000, "listening");
    // Heartbeats a minute apart: within the test only the hand-over can tell the new process.
    const register = httpRegistrar({
      uri: `http://127.0.0.1:${port}`,
      clusterName: "upgrade",
      heartbeatMs: 60_000,
      ttlMs: 120_000,
      logger: silentLogger,
      retryMs: 100,
    });
    const context = startEmulatedWorker({ role: "context", register });
    const generation = startEmulatedWorker({ role: "generation", register });
    workers.push(context, generation);
    await old.waitFor((record) => record["msg"] === "all workers are ready", 20_000, "its workers");

    const next = spawnProxy(dir, ["-c", config, "--take-over"], "new");
    const taking = await next.waitFor((record) => String(record["msg"]).startsWith("taking over the port"), 20_000, "the hand-over");
    expect(taking["registrations"]).toBe(2);
    await next.waitFor((record) => record["msg"] === "took over the port", 20_000, "the take-over");
    expect(await servingPid(port)).toBe(next.pid);
    const info = (await (await fetch(`http://127.0.0.1:${port}/cluster_info`)).json()) as {
      current_workers: { context_servers: unknown[]; generation_servers: unknown[] };
    };
    expect([info.current_workers.context_servers.length, info.current_workers.generation_servers.length]).toEqual([1, 1]);
    const answer = await fetch(`http://127.0.0.1:${port}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(chat),
    });
    expect(answer.status).toBe(200);
    expect(next.records.some((record) => String(record["msg"]).startsWith("metrics counters start from zero"))).toBe(true);
    expect(await old.child.exited).toBe(0);
    next.child.kill("SIGTERM");
    expect(await next.child.exited).toBe(0);
  }, 60_000);

  test("a take-over whose workers are not ready in time gives up and leaves the old process serving and holding the port", async () => {
    const dir = temp.dir("upgrade-abandon-");
    const port = freePort();
    const { context, generation } = emulatedPair();
    const old = spawnProxy(dir, ["--port", String(port), "--context", context.url, "--generation", generation.url], "old");
    await old.waitFor((record) => record["msg"] === "all workers are ready", 20_000, "its workers");
    const nobody = `http://127.0.0.1:${freePort()}`;
    const next = spawnProxy(
      dir,
      ["--port", String(port), "--context", nobody, "--generation", generation.url, "--server-start-timeout", "1", "--take-over"],
      "new",
    );
    expect(await next.child.exited).toBe(1);
    expect(next.records.some((record) => String(record["msg"]).startsWith("take-over abandoned"))).toBe(true);
    expect(next.records.some(isListening)).toBe(false);
    expect(await servingPid(port)).toBe(old.pid);
    const again = spawnProxy(dir, ["--port", String(port), "--context", context.url, "--generation", generation.url], "again");
    expect(await again.child.exited).toBe(2);
    expect(again.stderr).toContain(`(pid ${old.pid}, started `);
    old.child.kill("SIGTERM");
    expect(await old.child.exited).toBe(0);
  }, 60_000);
  test("under systemd (Type=notify) READY=1 comes once listening; a process taking over sends it only after the old one stopped listening", async () => {
    const dir = temp.dir("upgrade-notify-");
    const port = freePort();
    const { context, generation } = emulatedPair();
    const args = ["--port", String(port), "--context", context.url, "--generation", generation.url];
    const systemd = { old: notifySocket(join(dir, "notify-old")), new: notifySocket(join(dir, "notify-new")) };
    try {
      const old = spawnProxy(dir, args, "old", { ...process.env, NOTIFY_SOCKET: join(dir, "notify-old") });
      let said: string | undefined;
      await eventually(() => (said = systemd.old.read()) !== undefined, 20_000, "the old process's READY=1");
      const oldReadyAt = Date.now();
      expect(said).toBe("READY=1");
      const listening = await old.waitFor(isListening, 5000, "listening");
      expect(Date.parse(String(listening["ts"]))).toBeLessThanOrEqual(oldReadyAt);

      const next = spawnProxy(dir, [...args, "--take-over"], "new", { ...process.env, NOTIFY_SOCKET: join(dir, "notify-new") });
      await eventually(() => (said = systemd.new.read()) !== undefined, 20_000, "the new process's READY=1");
      const readyAt = Date.now();
      expect(said).toBe("READY=1");
      const stopped = await old.waitFor((record) => String(record["msg"]).startsWith("stopped listening"), 5000, "stopped listening");
      expect(Date.parse(String(stopped["ts"]))).toBeLessThanOrEqual(readyAt);
      expect(await old.child.exited).toBe(0);
      next.child.kill("SIGTERM");
      expect(await next.child.exited).toBe(0);
    } finally {
      systemd.old.close();
      systemd.new.close();
    }
  }, 60_000);
});
