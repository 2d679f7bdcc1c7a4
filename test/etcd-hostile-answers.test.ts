import { afterAll, beforeAll, describe, expect, test } from "bun:test";
import { RANGE_ANSWER_BYTES } from "../src/discovery/etcd-client.ts";
import { startEmulatedWorker, type EmulatedWorker } from "../src/emulator/index.ts";
import { eventually, startCluster } from "./support/cluster.ts";

/**
 * An etcd (or whatever answers on its address) whose range answers are hostile: the proxy reads
 * each within a size and shape bound, as it reads a worker's, refuses it with the bound named,
 * keeps running, and takes the workers of the normal answer that follows.
 */

const CHUNK = 64 * 1024;
const encoder = new TextEncoder();

/** One range answer served: how many bytes the fake etcd produced of it, out of how many. */
interface Served {
  readonly name: string;
  readonly total: number;
  produced: number;
}

/** A chunked (no content-length) answer of `total` bytes, produced only as the reader pulls. */
function pulled(name: string, head: string, fill: string, tail: string, total: number, log: Served[]): Response {
  const served: Served = { name, total, produced: 0 };
  log.push(served);
  const headBytes = encoder.encode(head);
  const tailBytes = encoder.encode(tail);
  const fillChunk = encoder.encode(fill.repeat(Math.ceil(CHUNK / fill.length)).slice(0, CHUNK - (CHUNK % fill.length)));
  const middle = total - headBytes.length - tailBytes.length;
  let filled = 0;
  return new Response(
    new ReadableStream<Uint8Array>(
      {
        pull(controller) {
          const piece =
            served.produced === 0
              ? headBytes
              : filled < middle
                ? fillChunk.subarray(0, Math.min(fillChunk.length, middle - filled))
                : tailBytes;
          if (served.produced > 0 && filled < middle) filled += piece.length;
          served.produced += piece.length;
          controller.enqueue(piece);
          if (served.produced >= total) controller.close();
        },
      },
      { highWaterMark: 0 },
    ),
    { headers: { "content-type": "application/json" } },
  );
}

function registration(id: string, worker: EmulatedWorker, role: number): { key: string; value: string; mod_revision: string } {
  const key = `/trtllm-disagg/hostile/workers/${id}`;
  const value = JSON.stringify({ worker_id: id, host: "127.0.0.1", port: worker.port, role });
  return { key: Buffer.from(key).toString("base64"), value: Buffer.from(value).toString("base64"), mod_revision: "5" };
}

const context = startEmulatedWorker({ role: "context" });
const generation = startEmulatedWorker({ role: "generation" });
const served: Served[] = [];
/** The range answers still to give, in order; once empty, the normal answer. */
const hostile: (() => Response)[] = [];
/** The first lines of the watch streams still to open, in order; once empty, `created`. */
const hostileWatches: string[] = [];
let watches = 0;
let fakeEtcd: ReturnType<typeof Bun.serve>;

beforeAll(() => {
  fakeEtcd = Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    async fetch(request) {
      const path = new URL(request.url).pathname;
      await request.arrayBuffer();
      if (path === "/v3/kv/range") {
        const next = hostile.shift();
        if (next !== undefined) return next();
        const normal = JSON.stringify({
          header: { revision: "5" },
          kvs: [registration("c", context, 0), registration("g", generation, 1)],
        });
        served.push({ name: "normal", total: normal.length, produced: normal.length });
        return new Response(normal, { headers: { "content-type": "application/json" } });
      }
      if (path === "/v3/watch") {
        watches += 1;
        const first = hostileWatches.shift() ?? JSON.stringify({ result: { header: { revision: "5" }, created: true } });
        // Its first line, then quiet: the stream stays open until the proxy drops it.
        return new Response(
          new ReadableStream({
            start(controller) {
              controller.enqueue(encoder.encode(`${first}\n`));
            },
          }),
        );
      }
      return Response.json({ header: { revision: "5" } });
    },
  });
});

afterAll(async () => {
  await fakeEtcd.stop(true);
  await context.stop();
  await generation.stop();
});

describe("etcd's answers are read within bounds", () => {
  test("a huge, a deep and a dense range answer are each refused with the bound named, the huge one mostly unread, and the proxy then takes a normal answer's workers", async () => {
    const huge = 3 * RANGE_ANSWER_BYTES;
    const dense = 2 * 1024 * 1024;
    served.length = 0;
    hostile.push(
      // Valid JSON: one key whose value is 48 MiB of base64.
      () => pulled("huge", '{"header":{"revision":"5"},"kvs":[{"key":"a2V5","value":"', "QUFB", '","mod_revision":"5"}]}', huge, served),
      // 100,000 levels of arrays in 200 KB.
      () => pulled("deep", '{"kvs":', "[", "]".repeat(100_000) + "}", 200_007, served),
      // Empty arrays, 3 bytes each: ~700,000 values in 2 MiB, ~90 bytes each once parsed.
      () => pulled("dense", '{"kvs":[', "[],", "[]]}", dense, served),
    );
    await using cluster = await startCluster({
      contexts: [],
      generations: [],
      config: {
        discovery: {
          kind: "cluster",
          storage: "etcd",
          endpoint: fakeEtcd.url.origin,
          clusterName: "hostile",
          minimalContext: 1,
          minimalGeneration: 1,
          leaseTtlMs: 2000,
        },
        serverStartTimeoutMs: 50,
        healthCheckIntervalMs: 50,
      },
    });
    await eventually(
      () =>
        cluster.proxy.app.placement.pool.ready("generation").length === 1 && cluster.proxy.app.placement.pool.ready("context").length === 1,
      15_000,
      "the normal answer's workers ready",
    );
    expect(served.map((answer) => answer.name)).toEqual(["huge", "deep", "dense", "normal"]);

    const refusals = cluster.logs
      .filter((record) => record["msg"] === "etcd unreachable; keeping the last known workers")
      .map((record) => String(record["error"]));
    expect(refusals).toEqual([
      `etcd's answer to /v3/kv/range is larger than ${RANGE_ANSWER_BYTES} bytes`,
      "etcd's answer to /v3/kv/range nests deeper than 256 levels",
      expect.stringMatching(/^etcd's answer to \/v3\/kv\/range holds more than \d+ JSON values for its size$/),
    ]);
    // The huge answer was left mostly unproduced: read up to the bound (plus what was in flight), not to its end.
    const hugeServed = served[0]!;
    expect(hugeServed.produced / hugeServed.total).toBeLessThan(0.6);
    // The proxy serves once the normal answer came.
    expect((await fetch(`${cluster.url}/health`)).status).toBe(200);
    expect(
      (await cluster.post("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "hi" }], max_tokens: 2 })).status,
    ).toBe(200);
  }, 30_000);

  test("a deep watch message is refused as deep, and the watch opened again keeps the workers", async () => {
    // 100,000 levels of arrays where the result object belongs.
    hostileWatches.push(`{"result":${"[".repeat(100_000)}${"]".repeat(100_000)}}`);
    const watchesBefore = watches;
    await using cluster = await startCluster({
      contexts: [],
      generations: [],
      config: {
        discovery: {
          kind: "cluster",
          storage: "etcd",
          endpoint: fakeEtcd.url.origin,
          clusterName: "hostile",
          minimalContext: 1,
          minimalGeneration: 1,
          leaseTtlMs: 2000,
        },
        serverStartTimeoutMs: 50,
        healthCheckIntervalMs: 50,
      },
    });
    await eventually(() => watches - watchesBefore >= 2, 10_000, "the watch opened again");
    const refusals = cluster.logs
      .filter((record) => record["msg"] === "etcd unreachable; keeping the last known workers")
      .map((record) => String(record["error"]));
    expect(refusals).toEqual(["etcd's watch message nests deeper than 256 levels"]);
    await eventually(() => cluster.proxy.app.placement.pool.ready("generation").length === 1, 10_000, "the workers ready");
    expect((await fetch(`${cluster.url}/health`)).status).toBe(200);
  }, 30_000);
});
