/**
 * The listener as upstream's newer configs set it: server_keep_alive_timeout bounds idle
 * keep-alive connections from below (raw TCP: a client library would hide when the server
 * closes), and bind_host is what the socket binds while `hostname` is what is advertised.
 */

import { afterAll, describe, expect, test } from "bun:test";
import { mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { startCluster } from "./support/cluster.ts";
import { rawConnect, rawJsonPost, rawRequest, statuses, type RawConnection } from "./support/raw-http.ts";

const MAIN = join(import.meta.dir, "..", "src", "main.ts");
const chat = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 3 });
const children: Bun.Subprocess[] = [];

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
});

/** A connection that got one answer; `answeredAt` is when its last byte came. */
async function answered(url: string, request: string, last: string): Promise<{ conn: RawConnection; answeredAt: number }> {
  const conn = await rawConnect(url);
  conn.write(request);
  await conn.until((received) => received.includes(last));
  return { conn, answeredAt: performance.now() };
}

describe("server_keep_alive_timeout", () => {
  // upstream: test_server_keep_alive_timeout_is_passed_to_uvicorn (default 10, 3600 accepted), read_file id 70156702744; #16430.
  test("an idle keep-alive connection is kept at least the timeout and then closed, while a longer setting keeps its own open", async () => {
    const keepAliveS = 1.5;
    await using short = await startCluster({ config: { serverKeepAliveTimeoutS: keepAliveS } });
    // Longer, and shorter than the 4–8 s the runtime's timer alone would take for 1.5 s: the
    // quiet server's sweep closed the short one well before its timer could.
    await using control = await startCluster({ config: { serverKeepAliveTimeoutS: 6 } });
    // After a proxied answer (the route lifted the bound and put it back) and after a quick one.
    const idle = await Promise.all([
      answered(short.url, rawJsonPost("/v1/chat/completions", chat), '"choices"'),
      answered(short.url, rawRequest("GET", "/health", { host: "p" }), "\r\n\r\n"),
    ]);
    const probe = await answered(short.url, rawRequest("GET", "/version", { host: "p" }), '"version"');
    const kept = await answered(control.url, rawJsonPost("/v1/chat/completions", chat), '"choices"');
    try {
      // Still there just before the timeout: a second request on it is served.
      await Bun.sleep(keepAliveS * 1000 - 100);
      probe.conn.write(rawRequest("GET", "/version", { host: "p" }));
      expect(statuses(await probe.conn.until((received) => statuses(received).length === 2))).toEqual([200, 200]);
      // Closed after it, never before.
      for (const { conn, answeredAt } of idle) {
        await conn.closed;
        expect(performance.now() - answeredAt).toBeGreaterThanOrEqual(keepAliveS * 1000);
      }
      expect(kept.conn.isClosed).toBe(false);
    } finally {
      for (const { conn } of [...idle, probe, kept]) conn.end();
    }
  }, 20_000);
});

async function reachable(host: string, port: string): Promise<boolean> {
  try {
    const response = await fetch(`http://${host}:${port}/health`);
    await response.body?.cancel();
    return true;
  } catch {
    return false;
  }
}

describe("slow request heads (slowloris)", () => {
  test("a request head trickled on a new connection, or on one kept alive after an answer, is cut by the runtime's bound", async () => {
    // The runtime's own seconds (1 = one 4 s tick), as server_keep_alive_timeout sets them on both paths.
    await using cluster = await startCluster({ idleTimeoutS: 1 });
    const head = rawRequest("GET", "/health", { host: "p", "x-padding": "a".repeat(200) });
    const trickle = async (conn: RawConnection): Promise<boolean> => {
      for (let i = 0; i < head.length - 4 && !conn.isClosed; i++) {
        conn.write(head[i]!);
        await Promise.race([conn.closed, Bun.sleep(250)]);
      }
      return conn.isClosed;
    };
    const fresh = await rawConnect(cluster.url);
    const kept = (await answered(cluster.url, rawRequest("GET", "/version", { host: "p" }), '"version"')).conn;
    expect(await Promise.all([trickle(fresh), trickle(kept)])).toEqual([true, true]);
    expect(statuses(fresh.received)).toEqual([]);
    expect(statuses(kept.received)).toEqual([200]);
  }, 30_000);
});

describe("bind_host", () => {
  test("hostname 0.0.0.0 with bind_host 127.0.0.1 listens on 127.0.0.1 only; bind_host 127.0.0.2 on that address only", async () => {
    await using one = await startCluster({ config: { host: "0.0.0.0", bindHost: "127.0.0.1" } });
    const onePort = new URL(one.url).port;
    expect([await reachable("127.0.0.1", onePort), await reachable("127.0.0.2", onePort)]).toEqual([true, false]);
    // The control: another loopback address is reachable when it is the one bound.
    await using two = await startCluster({ config: { host: "0.0.0.0", bindHost: "127.0.0.2" } });
    const twoPort = new URL(two.url).port;
    expect([await reachable("127.0.0.1", twoPort), await reachable("127.0.0.2", twoPort)]).toEqual([false, true]);
  });

  // upstream: test_single_server_binds_bind_host_and_advertises_hostname,
  // tests/unittest/disaggregated/test_disagg_listener_wiring.py @ 06837554939c64fce469e8bd83ba1959741567eb.
  test("the socket binds bind_host while --report_addr, /cluster_info and the log advertise hostname, with no warning", async () => {
    const context = startEmulatedWorker({ role: "context" });
    const generation = startEmulatedWorker({ role: "generation" });
    const dir = mkdtempSync(join(tmpdir(), "disagg-bind-"));
    const yaml = join(dir, "disagg_config.yaml");
    const report = join(dir, "bound-address.txt");
    writeFileSync(
      yaml,
      [
        "hostname: advertised.example",
        "bind_host: 127.0.0.9",
        "port: 0",
        "server_keep_alive_timeout: 3600",
        `context_servers: { num_instances: 1, urls: ["127.0.0.1:${context.port}"] }`,
        `generation_servers: { num_instances: 1, urls: ["127.0.0.1:${generation.port}"] }`,
        "",
      ].join("\n"),
    );
    const child = Bun.spawn([process.execPath, MAIN, "disaggregated", "-c", yaml, "--report_addr", report], {
      stdout: "pipe",
      stderr: "pipe",
    });
    children.push(child);
    try {
      const lines: string[] = [];
      const reader = child.stdout.getReader();
      let text = "";
      while (!lines.some((line) => line.includes("all workers are ready"))) {
        const { done, value } = await reader.read();
        if (done) throw new Error(`exited: ${await new Response(child.stderr).text()}`);
        text += new TextDecoder().decode(value);
        lines.push(...text.split("\n").slice(0, -1));
        text = text.slice(text.lastIndexOf("\n") + 1);
      }
      const url = new URL(lines[0]!.trim());
      expect(url.hostname).toBe("127.0.0.9");
      expect(readFileSync(report, "utf8")).toBe(`advertised.example:${url.port}`);
      const info = (await (await fetch(`${url.origin}/cluster_info`)).json()) as { server: unknown };
      expect(info.server).toEqual({ hostname: "advertised.example", bind_host: "127.0.0.9", port: Number(url.port) });
      const listening = lines
        .map((line) => (line.startsWith("{") ? (JSON.parse(line) as Record<string, unknown>) : {}))
        .find((line) => line["msg"] === "listening");
      expect(listening?.["advertised"]).toBe(`advertised.example:${url.port}`);
      expect(lines.filter((line) => line.includes(`"level":"warn"`) || line.includes(`"level":"error"`))).toEqual([]);
      const answer = await fetch(`${url.origin}/v1/chat/completions`, {
        method: "POST",
        body: chat,
        headers: { "content-type": "application/json" },
      });
      expect(answer.status).toBe(200);
    } finally {
      child.kill("SIGTERM");
      await child.exited;
      await Promise.all([context.stop(), generation.stop()]);
    }
  }, 20_000);
});

async function start(args: string[], files: Record<string, string>): Promise<{ code: number; stderr: string }> {
  const dir = mkdtempSync(join(tmpdir(), "disagg-names-"));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  const child = Bun.spawn([process.execPath, MAIN, ...args.map((arg) => (arg in files ? join(dir, arg) : arg))], {
    stdout: "pipe",
    stderr: "pipe",
  });
  children.push(child);
  const [code, stderr] = await Promise.all([child.exited, new Response(child.stderr).text()]);
  return { code, stderr };
}

describe("names that do not resolve", () => {
  const workers = 'context_servers: { urls: ["127.0.0.1:1"] }\ngeneration_servers: { urls: ["127.0.0.1:2"] }\n';

  test("an etcd host, a metadata server and a listen host that do not resolve each stop start-up with the same one line and exit 2", async () => {
    const runs = await Promise.all([
      start(["disaggregated", "-c", "etcd.yaml"], {
        "etcd.yaml": "hostname: 127.0.0.1\nport: 0\ndisagg_cluster: { cluster_uri: etcd://gpu-node-001.invalid }\n",
      }),
      start(["disaggregated", "-c", "plain.yaml", "-m", "meta.yaml"], {
        "plain.yaml": "hostname: 127.0.0.1\nport: 0\n",
        "meta.yaml": "server_type: etcd\nhostname: etcd-node.invalid\nport: 2379\n",
      }),
      start(["disaggregated", "-c", "listen.yaml"], { "listen.yaml": `hostname: svc.invalid\nport: 0\n${workers}` }),
      start(["disaggregated", "-c", "bind.yaml"], { "bind.yaml": `hostname: 127.0.0.1\nbind_host: node.invalid\nport: 0\n${workers}` }),
    ]);
    expect(runs).toEqual([
      {
        code: 2,
        stderr:
          "disagg-proxy: cannot resolve gpu-node-001.invalid (named by disagg_cluster.cluster_uri): the name does not resolve (ENOTFOUND)\n",
      },
      {
        code: 2,
        stderr:
          "disagg-proxy: cannot resolve etcd-node.invalid (named by the metadata server (-m)): the name does not resolve (ENOTFOUND)\n",
      },
      { code: 2, stderr: "disagg-proxy: cannot resolve svc.invalid (named by hostname (--host)): the name does not resolve (ENOTFOUND)\n" },
      {
        code: 2,
        stderr: "disagg-proxy: cannot resolve node.invalid (named by bind_host (--bind-host)): the name does not resolve (ENOTFOUND)\n",
      },
    ]);
  }, 20_000);
});
