/**
 * What TRTLLM_REQUEST_TRACE_DIR costs per request. Run: `npx bun bench/micro/request-trace-cost.ts [requests]`.
 *
 * 1. The writer alone, for a streamed chat request as the proxy reports it (a 2 KB body, nine
 *    headers, 20 client chunks of ~150 bytes): the time the request's own path spends in it
 *    (`accepted`, one `streamed` per chunk, `finished`), and the whole process's CPU per
 *    request once the drain has built and appended every line. Requests come in waves of 256
 *    (512 lines, half the queue) with the drain writing between waves: the writer's capacity
 *    on one core. Then one burst of 5,000 in a single turn shows the queue's bound (lines
 *    dropped and counted).
 * 2. The proxy end to end: emulated workers and the proxy in this process, streamed and
 *    non-streamed chat requests 16 at a time, trace off and on alternated five times; CPU of
 *    the whole process per request (the trace's share is the difference).
 */

import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { DEFAULTS, type ProxyConfig } from "../../src/config/types.ts";
import { startEmulatedWorker } from "../../src/emulator/index.ts";
import { memoryLogger } from "../../src/observability/logger.ts";
import { RequestTraceWriter } from "../../src/observability/request-trace.ts";
import { startProxy } from "../../src/server/serve.ts";

const REQUESTS = Number(process.argv[2] ?? 20_000);
const encoder = new TextEncoder();
const BODY = encoder.encode(
  JSON.stringify({
    model: "m",
    stream: true,
    messages: [
      { role: "system", content: "s ".repeat(400) },
      { role: "user", content: "u ".repeat(500) },
    ],
  }),
);
const HEADERS = new Headers({
  host: "proxy:8000",
  "content-type": "application/json",
  accept: "text/event-stream",
  authorization: "Bearer sk-0123456789",
  "user-agent": "bench/1.0",
  "x-session-id": "conversation-42",
  traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01",
  "content-length": String(BODY.length),
  "accept-encoding": "gzip",
});
const CHUNK = encoder.encode(
  `data: ${JSON.stringify({ id: "chatcmpl-1", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content: " token" } }] })}\n\n`,
);

function cpuMs(): number {
  const usage = process.cpuUsage();
  return (usage.user + usage.system) / 1000;
}

async function writerAlone(): Promise<void> {
  const dir = mkdtempSync(join(tmpdir(), "trace-bench-"));
  try {
    const writer = new RequestTraceWriter({ dir, logger: memoryLogger() });
    let onPath = 0;
    const cpu0 = cpuMs();
    const wall0 = performance.now();
    for (let i = 0; i < REQUESTS; i++) {
      const started = performance.now();
      const handle = writer.accepted({ route: "/v1/chat/completions", headers: HEADERS, body: BODY, conversationId: "conversation-42" });
      for (let chunk = 0; chunk < 20; chunk++) handle.capture.streamed(CHUNK);
      writer.finished(handle, { httpStatus: 200, errorCode: undefined, outcome: "ok", message: undefined, disaggRequestId: BigInt(i) });
      onPath += performance.now() - started;
      // Waves of 256 requests (512 lines, half the queue): the drain keeps up between them.
      // oxlint-disable-next-line no-await-in-loop -- requests arrive in waves, the drain writes between them
      if (i % 256 === 255) await writer.flush();
    }
    await writer.flush();
    const cpu = cpuMs() - cpu0;
    const wall = performance.now() - wall0;
    const counts = writer.counts();
    console.log(`writer alone, ${REQUESTS} streamed requests (2 lines each), in waves of 256:`);
    console.log(`  on the request's path: ${((onPath / REQUESTS) * 1000).toFixed(2)} µs/request (accepted + 20 chunks kept + finished)`);
    console.log(`  process CPU incl. building and appending the lines: ${((cpu / REQUESTS) * 1000).toFixed(1)} µs/request`);
    console.log(
      `  throughput: ${Math.round(REQUESTS / (wall / 1000))} requests/s (${Math.round((2 * REQUESTS) / (wall / 1000))} lines/s) on one core`,
    );
    console.log(`  lines: ${JSON.stringify(counts)}`);

    const burst = new RequestTraceWriter({ dir, logger: memoryLogger() });
    for (let i = 0; i < 5000; i++)
      burst.finished(burst.accepted({ route: "/v1/chat/completions", headers: HEADERS, body: BODY, conversationId: undefined }), {
        httpStatus: 200,
        errorCode: undefined,
        outcome: "ok",
        message: undefined,
        disaggRequestId: BigInt(i),
      });
    await burst.flush();
    console.log(`  a burst of 5,000 requests in one turn: ${JSON.stringify(burst.counts())}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function endToEnd(traceDir: string | undefined, stream: boolean, requests: number): Promise<{ cpuUs: number; wallMs: number }> {
  const context = startEmulatedWorker({ role: "context" });
  const generation = startEmulatedWorker({ role: "generation" });
  const config: ProxyConfig = {
    ...DEFAULTS,
    host: "127.0.0.1",
    port: 0,
    contextServers: [context.url],
    generationServers: [generation.url],
    nodeId: 1,
    configFile: undefined,
    logLevel: "error",
    dashboard: false,
    requestTraceDir: traceDir,
  };
  const proxy = startProxy(config, memoryLogger(), "bench");
  await proxy.waitForWorkers();
  const url = `${proxy.url.origin}/v1/chat/completions`;
  const body = JSON.stringify({ model: "m", stream, max_tokens: 16, messages: [{ role: "user", content: "u ".repeat(500) }] });
  const one = async (): Promise<void> => {
    const response = await fetch(url, { method: "POST", headers: { "content-type": "application/json", authorization: "Bearer x" }, body });
    await response.arrayBuffer();
  };
  for (let i = 0; i < 50; i++) await one();
  const cpu0 = cpuMs();
  const wall0 = performance.now();
  let next = 0;
  await Promise.all(
    Array.from({ length: 16 }, async () => {
      // oxlint-disable-next-line no-await-in-loop -- each lane sends its requests one after another
      while (next++ < requests) await one();
    }),
  );
  await proxy.app.requestTrace?.flush();
  const result = { cpuUs: ((cpuMs() - cpu0) / requests) * 1000, wallMs: performance.now() - wall0 };
  const counts = proxy.app.requestTrace?.counts();
  if (counts !== undefined && (counts.persisted !== counts.submitted || counts.submitted !== 2 * (requests + 50)))
    console.log(`  lines not all written: ${JSON.stringify(counts)}`);
  await proxy.stop();
  await Promise.all([context.stop(), generation.stop()]);
  return result;
}

const ROUNDS = 5;
const sorted = (values: readonly number[]): number[] => values.toSorted((x, y) => x - y);
const middle = (values: readonly number[]): number => sorted(values)[Math.floor(values.length / 2)]!;

/**
 * The machine is shared and busy: noise only ever adds CPU, so the least of five interleaved
 * runs is the figure compared, the median beside it.
 */
async function proxyEndToEnd(): Promise<void> {
  const requests = Math.max(500, Math.floor(REQUESTS / 20));
  for (const stream of [false, true]) {
    const off: number[] = [];
    const on: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const dir = mkdtempSync(join(tmpdir(), "trace-bench-"));
      // oxlint-disable-next-line no-await-in-loop -- runs alternate, one at a time
      off.push((await endToEnd(undefined, stream, requests)).cpuUs);
      // oxlint-disable-next-line no-await-in-loop -- runs alternate, one at a time
      on.push((await endToEnd(dir, stream, requests)).cpuUs);
      rmSync(dir, { recursive: true, force: true });
    }
    const [least, most] = [Math.min(...off), Math.min(...on)];
    console.log(
      `proxy end to end, ${stream ? "streamed" : "non-streamed"} chat, ${requests} requests x ${ROUNDS} interleaved rounds, 16 at a time (CPU of proxy + emulated workers):`,
    );
    console.log(
      `  trace off: ${sorted(off)
        .map((v) => v.toFixed(0))
        .join(", ")} µs CPU/request (least ${least.toFixed(0)}, median ${middle(off).toFixed(0)})`,
    );
    console.log(
      `  trace on:  ${sorted(on)
        .map((v) => v.toFixed(0))
        .join(", ")} µs CPU/request (least ${most.toFixed(0)}, median ${middle(on).toFixed(0)})`,
    );
    console.log(
      `  difference of the least: ${(most - least).toFixed(0)} µs/request (${(((most - least) / least) * 100).toFixed(1)} %); of the medians: ${(middle(on) - middle(off)).toFixed(0)} µs`,
    );
  }
}

await writerAlone();
await proxyEndToEnd();
