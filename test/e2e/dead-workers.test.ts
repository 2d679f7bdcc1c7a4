/**
 * A worker that refuses connections leaves rotation at the first refusal: its requests go to
 * another worker at once (no --retry-delay-ms), and /health says 503 as soon as a role has no
 * worker left in rotation. Health checks are a minute apart here, so only the requests can tell.
 * On the compiled binary, workers included.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ensureBinary, spawnBinary, spawnBinaryWithLog, type Child, type LogLines } from "./binary-harness.ts";

const children: Child[] = [];

afterAll(() => {
  for (const child of children) child.kill("SIGKILL");
});

const CHECKS_A_MINUTE_APART = ["--health-check-interval-ms", "60000"];
const chat = JSON.stringify({ model: "m", messages: [{ role: "user", content: "hello" }], max_tokens: 2 });

function post(url: string): Promise<Response> {
  return fetch(`${url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body: chat });
}

/** Seconds that `count` requests in a row take, each answered 200. */
async function timed(url: string, count: number): Promise<number> {
  const started = performance.now();
  for (let i = 0; i < count; i++) {
    // oxlint-disable-next-line no-await-in-loop -- one request at a time, as a latency figure
    const response = await post(url);
    expect(response.status).toBe(200);
    // oxlint-disable-next-line no-await-in-loop -- the answer read whole before the next request
    await response.text();
  }
  return (performance.now() - started) / 1000;
}

async function proxyOver(context: string[], generation: string[]): Promise<{ url: string; log: LogLines }> {
  const args = [
    "serve",
    "--port",
    "0",
    "--host",
    "127.0.0.1",
    ...context.flatMap((url) => ["--context", url]),
    ...generation.flatMap((url) => ["--generation", url]),
  ];
  const { url, log } = await spawnBinaryWithLog([...args, ...CHECKS_A_MINUTE_APART], children);
  await log.until((line) => line.includes('"all workers are ready"'));
  return { url, log };
}

describe("a worker that refuses connections", () => {
  beforeAll(() => ensureBinary(), 120_000);

  test("leaves rotation at its first refusal: with one of two context workers killed, 30 requests take under 10x as long as on the healthy fleet (before: ~100x)", async () => {
    const contexts = [
      await spawnBinary(["worker", "--role", "context", "--port", "0"], children),
      await spawnBinary(["worker", "--role", "context", "--port", "0"], children),
    ];
    const generation = await spawnBinary(["worker", "--role", "generation", "--port", "0"], children);
    const { url, log } = await proxyOver(
      contexts.map((worker) => worker.url),
      [generation.url],
    );
    await timed(url, 4);
    const healthy = await timed(url, 30);
    contexts[1]!.child.kill("SIGKILL");
    await contexts[1]!.child.exited;
    const oneDead = await timed(url, 30);
    // Before: each request that met the dead worker waited --retry-delay-ms (1 s) until 5 failures ejected it.
    expect({ ratio: oneDead / healthy < 10, healthy, oneDead }).toMatchObject({ ratio: true });
    const lines = await log.until((line) => line.includes("worker out of rotation"));
    expect(lines.filter((line) => line.includes("worker out of rotation")).map((line) => JSON.parse(line))).toMatchObject([
      { level: "warn", worker: contexts[1]!.url, reason: "connection refused" },
    ]);
  }, 60_000);

  test("the only generation worker killed: /health is 503 after the first request that met it, and the next request is refused before any prefill", async () => {
    const context = await spawnBinary(["worker", "--role", "context", "--port", "0"], children);
    const generation = await spawnBinary(["worker", "--role", "generation", "--port", "0"], children);
    const { url } = await proxyOver([context.url], [generation.url]);
    expect((await post(url)).status).toBe(200);
    expect((await fetch(`${url}/health`)).status).toBe(200);
    generation.child.kill("SIGKILL");
    await generation.child.exited;
    const first = await post(url);
    await first.text();
    expect(first.status).toBeGreaterThanOrEqual(500);
    expect((await fetch(`${url}/health`)).status).toBe(503);
    const prefillsBefore = await contextAttempts(url);
    const next = await post(url);
    expect({ status: next.status, body: await next.text() }).toMatchObject({ status: 503, body: expect.stringContaining("generation") });
    expect(await contextAttempts(url)).toBe(prefillsBefore);
  }, 60_000);
});

/** The proxy's count of attempts sent to context workers (ctx_total_requests_total). */
async function contextAttempts(url: string): Promise<number> {
  const text = await (await fetch(`${url}/prometheus/metrics`)).text();
  return Number(/^ctx_total_requests_total (\d+)/m.exec(text)?.[1] ?? Number.NaN);
}
