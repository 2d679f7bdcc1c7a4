/**
 * The request line names who sent it (X-Forwarded-For only from --trusted-proxy addresses) and
 * its user agent, a 401 included; /prometheus/metrics has the process's figures (once, whatever
 * num_workers) and whole-request latency and time-to-first-token histograms. On the compiled binary.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { scratch } from "../support/scratch.ts";
import { ensureBinary, spawnBinary, spawnBinaryWithLog, type Child, type LogLines } from "./binary-harness.ts";

const children: Child[] = [];
const temp = scratch();

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
  temp.removeAll();
});

const chat = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hello" }], max_tokens: 2, stream: true });

async function proxy(extra: string[]): Promise<{ child: Child; url: string; log: LogLines }> {
  const context = await spawnBinary(["worker", "--role", "context", "--port", "0"], children);
  const generation = await spawnBinary(["worker", "--role", "generation", "--port", "0"], children);
  const args = ["serve", "--port", "0", "--host", "127.0.0.1", "--context", context.url, "--generation", generation.url, ...extra];
  const started = await spawnBinaryWithLog(args, children);
  await started.log.until((line) => line.includes('"all workers are ready"'));
  return started;
}

async function requestLines(log: LogLines, count: number): Promise<Record<string, unknown>[]> {
  const found: Record<string, unknown>[] = [];
  await log.until((line) => {
    if (line.includes('"msg":"request"')) found.push(JSON.parse(line) as Record<string, unknown>);
    return found.length === count;
  });
  return found;
}

function post(url: string, headers: Record<string, string>): Promise<string> {
  return fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: chat,
  }).then((r) => r.text());
}

/** The value of a sample line, or undefined. */
function sample(text: string, name: string): number | undefined {
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${name} `) || candidate.startsWith(`${name}{`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("access lines and metrics", () => {
  beforeAll(() => ensureBinary(), 120_000);

  test("the request line has the client address and user agent; X-Forwarded-For counts only from a --trusted-proxy", async () => {
    const keys = join(temp.dir("access-"), "keys");
    writeFileSync(keys, "the-key\n");
    const trusting = await proxy(["--trusted-proxy", "127.0.0.0/8", "--api-key-file", keys]);
    const forwarded = { "x-forwarded-for": "198.51.100.7, 203.0.113.9", "user-agent": "curl/8.5.0" };
    await post(trusting.url, { ...forwarded, authorization: "Bearer the-key" });
    await post(trusting.url, forwarded);
    const [ok, refused] = await requestLines(trusting.log, 2);
    expect(ok).toMatchObject({ status: 200, client: "203.0.113.9", user_agent: "curl/8.5.0" });
    expect(refused).toMatchObject({ status: 401, client: "203.0.113.9", user_agent: "curl/8.5.0" });

    const plain = await proxy([]);
    await post(plain.url, forwarded);
    expect((await requestLines(plain.log, 1))[0]).toMatchObject({ status: 200, client: "127.0.0.1", user_agent: "curl/8.5.0" });
    const metrics = await (await fetch(`${plain.url}/prometheus/metrics`)).text();
    for (const name of ["process_resident_memory_bytes", "process_cpu_seconds_total", "process_open_fds", "nodejs_eventloop_lag_seconds"]) {
      expect({ name, value: sample(metrics, name) }).toEqual({ name, value: expect.any(Number) });
    }
    expect(sample(metrics, 'disagg_proxy_e2e_request_latency_seconds_count{route="/v1/chat/completions"}')).toBe(1);
    expect(sample(metrics, 'disagg_proxy_time_to_first_token_seconds_count{route="/v1/chat/completions"}')).toBe(1);
  }, 60_000);

  test("--client-address-header x-real-ip (nginx's proxy_set_header X-Real-IP): the trusted proxy's X-Real-IP names the client", async () => {
    const nginx = await proxy(["--trusted-proxy", "127.0.0.1", "--client-address-header", "X-Real-IP"]);
    await post(nginx.url, { "x-real-ip": "198.51.100.7", "x-forwarded-for": "203.0.113.9", "user-agent": "curl/8.5.0" });
    expect((await requestLines(nginx.log, 1))[0]).toMatchObject({ status: 200, client: "198.51.100.7" });
  }, 60_000);

  test("with --protect-metrics, /metrics takes the key as the dashboard does: Bearer, or a Basic password (curl -u :KEY)", async () => {
    const keys = join(temp.dir("access-"), "keys");
    writeFileSync(keys, "the-key\n");
    const { url } = await proxy(["--api-key-file", keys, "--protect-metrics"]);
    const status = async (path: string, headers: Record<string, string>): Promise<number> =>
      (await fetch(`${url}${path}`, { headers })).status;
    const basic = { authorization: `Basic ${Buffer.from(":the-key").toString("base64")}` };
    expect({
      metricsBasic: await status("/metrics", basic),
      prometheusBasic: await status("/prometheus/metrics", basic),
      metricsBearer: await status("/metrics", { authorization: "Bearer the-key" }),
      metricsNone: await status("/metrics", {}),
      metricsWrong: await status("/metrics", { authorization: `Basic ${Buffer.from(":wrong").toString("base64")}` }),
      dashboardBasic: await status("/dashboard", basic),
    }).toEqual({ metricsBasic: 200, prometheusBasic: 200, metricsBearer: 200, metricsNone: 401, metricsWrong: 401, dashboardBasic: 200 });
  }, 60_000);

  test("with num_workers 2 the process's figures are its own, not summed over its event loops", async () => {
    const { child, url } = await proxy(["--num-workers", "2"]);
    for (let i = 0; i < 50 && sample(await (await fetch(`${url}/prometheus/metrics`)).text(), "process_open_fds") === undefined; i++)
      await Bun.sleep(20);
    const text = await (await fetch(`${url}/prometheus/metrics`)).text();
    expect(text.split("\n").filter((line) => line.startsWith("process_resident_memory_bytes "))).toHaveLength(1);
    const rssKb = Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${child.pid}/status`, "utf8"))?.[1]);
    const reported = sample(text, "process_resident_memory_bytes") ?? 0;
    // Summed over two loops it would be about twice the process's own.
    const ratio = reported / (rssKb * 1024);
    expect({ ratio, near: ratio > 0.6 && ratio < 1.4 }).toMatchObject({ near: true });
  }, 60_000);
});
