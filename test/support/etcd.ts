/**
 * A real etcd for the discovery tests: one member on free loopback ports with a temporary data
 * directory. It can be stopped and started again on the same data (and on another client port,
 * to change the store behind a client's back). Missing etcd is a failure, never a skip.
 */

import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Subprocess } from "bun";
import { EtcdClient } from "../../src/discovery/etcd-client.ts";
import type { DiscoveryEvent } from "../../src/discovery/index.ts";
import { eventually } from "./wait.ts";

export interface EtcdServer extends AsyncDisposable {
  /** `http://127.0.0.1:<client port>` of the first start. */
  readonly endpoint: string;
  /** Starts etcd again on the same data; `clientPort` listens elsewhere than `endpoint`. Resolves once it answers. */
  start(options?: { clientPort?: number }): Promise<string>;
  /** SIGTERM (SIGKILL after 5 s); resolves once the process is gone. */
  stop(): Promise<void>;
  /** SIGSTOP / SIGCONT: etcd keeps its connections open but answers nothing, as behind a network partition. */
  freeze(): void;
  thaw(): void;
  /** A client of whichever client port the running etcd listens on (the gateway; etcdctl is not installed in CI). */
  client(): EtcdClient;
  /** Keys starting with `prefix`, sorted. */
  keys(prefix: string): Promise<string[]>;
  get(key: string): Promise<string | undefined>;
  /** Compacts away every revision before the current one; resolves with the current revision. */
  compact(): Promise<string>;
}

const START_TIMEOUT_MS = 15_000;

export function requireEtcdBinary(): string {
  const path = Bun.which("etcd");
  if (path === null) {
    throw new Error(
      "The etcd binary is not on PATH: the discovery tests need a real etcd. " +
        "Install it with `apt-get install -y --no-install-recommends etcd-server` (.ci/run does this).",
    );
  }
  return path;
}

/** A port nothing listens on right now (bound, read, released). */
export function freePort(): number {
  const listener = Bun.listen({ hostname: "127.0.0.1", port: 0, socket: { data() {} } });
  const { port } = listener;
  listener.stop(true);
  return port;
}

export async function startEtcd(): Promise<EtcdServer> {
  const binary = requireEtcdBinary();
  const dir = mkdtempSync(join(tmpdir(), "disagg-etcd-"));
  const clientPort = freePort();
  const peerPort = freePort();
  const endpoint = `http://127.0.0.1:${clientPort}`;
  let proc: Subprocess | undefined;
  let current = endpoint;

  const start = async (options: { clientPort?: number } = {}): Promise<string> => {
    if (proc !== undefined) throw new Error("etcd is already running");
    current = `http://127.0.0.1:${options.clientPort ?? clientPort}`;
    const peer = `http://127.0.0.1:${peerPort}`;
    const log = join(dir, "etcd.log");
    proc = Bun.spawn(
      [
        binary,
        "--name",
        "test",
        "--data-dir",
        join(dir, "data"),
        "--listen-client-urls",
        current,
        "--advertise-client-urls",
        current,
        "--listen-peer-urls",
        peer,
        "--initial-advertise-peer-urls",
        peer,
        "--initial-cluster",
        `test=${peer}`,
      ],
      { stdin: "ignore", stdout: Bun.file(log), stderr: Bun.file(log) },
    );
    await waitUntilAnswering(current, proc, log);
    return current;
  };

  const stop = async (): Promise<void> => {
    const running = proc;
    proc = undefined;
    if (running === undefined) return;
    running.kill("SIGTERM");
    const timer = setTimeout(() => running.kill("SIGKILL"), 5000);
    await running.exited;
    clearTimeout(timer);
  };

  await start();
  return {
    endpoint,
    start,
    stop,
    freeze: () => proc?.kill("SIGSTOP"),
    thaw: () => proc?.kill("SIGCONT"),
    client: () => new EtcdClient(current),
    async keys(prefix) {
      return (await new EtcdClient(current).range(prefix)).kvs.map((kv) => kv.key).toSorted();
    },
    async get(key) {
      return (await new EtcdClient(current).range(key)).kvs.find((kv) => kv.key === key)?.value;
    },
    async compact() {
      const { revision } = await new EtcdClient(current).range("\0");
      const response = await fetch(`${current}/v3/kv/compaction`, {
        method: "POST",
        body: JSON.stringify({ revision: String(revision), physical: true }),
      });
      if (!response.ok) throw new Error(`compaction failed: HTTP ${response.status} ${await response.text()}`);
      return String(revision);
    },
    async [Symbol.asyncDispose]() {
      await stop();
      rmSync(dir, { recursive: true, force: true });
    },
  };
}

async function waitUntilAnswering(endpoint: string, proc: Subprocess, log: string): Promise<void> {
  const deadline = performance.now() + START_TIMEOUT_MS;
  while (performance.now() < deadline) {
    if (proc.exitCode !== null) break;
    try {
      const response = await fetch(`${endpoint}/health`, { signal: AbortSignal.timeout(1000) });
      const body: unknown = await response.json();
      if (response.ok && typeof body === "object" && body !== null && "health" in body && body.health === "true") return;
    } catch {
      // Not listening yet.
    }
    await Bun.sleep(50);
  }
  proc.kill("SIGKILL");
  let tail = "";
  try {
    tail = readFileSync(log, "utf8").slice(-2000);
  } catch {
    tail = "(no log)";
  }
  throw new Error(`etcd did not answer on ${endpoint} within ${START_TIMEOUT_MS} ms (exit code ${proc.exitCode}). Log tail:\n${tail}`);
}

/** Discovery events in arrival order, as `add context http://h:p` strings for readable assertions. */
export interface EventLog {
  readonly lines: string[];
  readonly onEvent: (event: DiscoveryEvent) => void;
  /** Resolves with the lines once there are at least `count`. */
  waitForCount(count: number, timeoutMs?: number): Promise<string[]>;
}

export function eventLog(): EventLog {
  const lines: string[] = [];
  return {
    lines,
    onEvent: (event) => lines.push(`${event.kind} ${event.role} ${event.origin}`),
    async waitForCount(count, timeoutMs = 5000) {
      await eventually(() => lines.length >= count, timeoutMs, `${count} discovery events (have: ${JSON.stringify(lines)})`);
      return lines;
    },
  };
}
