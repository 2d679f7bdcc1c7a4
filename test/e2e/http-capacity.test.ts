/**
 * The runtime's default cap of 256 simultaneous HTTP client requests is gone from the compiled
 * binary even when BUN_CONFIG_MAX_HTTP_REQUESTS is absent from its environment: more than 256
 * worker requests are open at one worker at once, and nothing is warned.
 */

import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { ensureBinary, spawnBinaryWithLog, type Child } from "./binary-harness.ts";

/** Above the runtime's default cap, well below what a 2-core machine handles. */
const STREAMS = 300;
const children: Child[] = [];

describe("worker request capacity of the compiled binary", () => {
  beforeAll(ensureBinary, 120_000);

  afterAll(() => {
    for (const child of children) child.kill("SIGKILL");
  });

  test(`${STREAMS} requests reach a context worker at once with no BUN_CONFIG_MAX_HTTP_REQUESTS and no warning`, async () => {
    let open = 0;
    let peak = 0;
    const { promise: allArrived, resolve: arrived } = Promise.withResolvers<void>();
    const worker = Bun.serve({
      hostname: "127.0.0.1",
      port: 0,
      idleTimeout: 0,
      async fetch(request) {
        if (new URL(request.url).pathname === "/health") return new Response("ok");
        open += 1;
        peak = Math.max(peak, open);
        if (open >= STREAMS) arrived();
        await allArrived;
        return Response.json({ error: "released" }, { status: 400 });
      },
    });
    const env: Record<string, string | undefined> = { ...process.env, BUN_CONFIG_MAX_HTTP_REQUESTS: undefined };
    const proxy = await spawnBinaryWithLog(
      ["serve", "--port", "0", "--host", "127.0.0.1", "--context", worker.url.origin, "--generation", worker.url.origin],
      children,
      env,
    );
    const startup = await proxy.log.until((line) => line.includes("all workers are ready"));
    expect(startup.filter((line) => line.includes('"level":"warn"'))).toEqual([]);

    // Raw sockets: this test process's own fetch is capped at 256.
    const { port } = new URL(proxy.url);
    const body = JSON.stringify({ model: "m", prompt: "p", max_tokens: 1 });
    const request = `POST /v1/completions HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n${body}`;
    const sockets = await Promise.all(
      Array.from({ length: STREAMS }, () => Bun.connect({ hostname: "127.0.0.1", port: Number(port), socket: { data() {} } })),
    );
    for (const socket of sockets) socket.write(request);
    await allArrived;
    expect(peak).toBe(STREAMS);
    for (const socket of sockets) socket.end();
    await worker.stop(true);
  }, 60_000);
});
