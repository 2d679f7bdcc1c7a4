import { describe, expect, test } from "bun:test";
import { parseJson } from "../json/json.ts";
import { KvEventPoller, readKvEvents, type KvEvent } from "./kv-events.ts";

describe("readKvEvents", () => {
  test("reads created, stored and removed events, wrapped in {event_id, data} or bare", () => {
    const answer = parseJson(`[
      {"event_id": 0, "data": {"type": "created", "num_blocks_per_cache_level": [100, 0]}, "window_size": 4096},
      {"event_id": 1, "data": {"type": "stored", "parent_hash": null, "blocks": [{"type": "stored_block", "block_hash": 12516000985120204551}, {"block_hash": 7}]}},
      {"type": "removed", "block_hashes": [7]},
      {"id": 3, "data": {"type": "updated", "block_hash": 7}}
    ]`);
    expect(readKvEvents(answer)).toEqual([
      { type: "created" },
      { type: "stored", hashes: [12516000985120204551n, 7n] },
      { type: "removed", hashes: [7n] },
    ]);
  });

  test("events hashed with another algorithm are skipped, since the router cannot compute their hashes", () => {
    const answer = parseJson(`[
      {"hash_algo": "v2_sha256", "data": {"type": "stored", "blocks": [{"block_hash": 1}]}},
      {"data": {"type": "removed", "hash_algo": "v2_sha256_64", "block_hashes": [1]}},
      {"data": {"type": "stored", "hash_algo": "v1_block_key", "blocks": [{"block_hash": 2}]}}
    ]`);
    expect(readKvEvents(answer)).toEqual([{ type: "stored", hashes: [2n] }]);
  });

  test("an answer that is not a list of events reads as no events", () => {
    expect(readKvEvents(parseJson(`{"detail": "Not Found"}`))).toEqual([]);
    expect(readKvEvents(null)).toEqual([]);
  });
});

function fakeWorkers(answer: (origin: string) => Promise<Response>): { fetch: (url: string) => Promise<Response>; calls: string[] } {
  const calls: string[] = [];
  return {
    calls,
    fetch: (url) => {
      const origin = url.replace("/kv_cache_events", "");
      calls.push(origin);
      return answer(origin);
    },
  };
}

const STORED = `[{"event_id": 1, "data": {"type": "stored", "blocks": [{"block_hash": 5}]}}]`;

describe("KvEventPoller", () => {
  test("hands every listener the events of the worker it polled", async () => {
    const workers = fakeWorkers(() => Promise.resolve(new Response(STORED)));
    const poller = new KvEventPoller({ fetch: workers.fetch });
    const seen: [string, readonly KvEvent[]][] = [];
    poller.listen((origin, events) => seen.push([origin, events]));
    poller.listen((origin, events) => seen.push([origin, events]));
    await poller.poll("http://w:1");
    expect(workers.calls).toEqual(["http://w:1"]);
    expect(seen).toEqual([
      ["http://w:1", [{ type: "stored", hashes: [5n] }]],
      ["http://w:1", [{ type: "stored", hashes: [5n] }]],
    ]);
  });

  test("requests made while a worker is being polled are covered by one follow-up poll", async () => {
    const gates: (() => void)[] = [];
    const workers = fakeWorkers(() => new Promise((resolve) => gates.push(() => resolve(new Response("[]")))));
    const poller = new KvEventPoller({ fetch: workers.fetch });
    const first = poller.poll("http://w:1");
    const during = [poller.poll("http://w:1"), poller.poll("http://w:1"), poller.poll("http://w:1")];
    expect(workers.calls).toHaveLength(1);
    gates.shift()?.();
    await first;
    await Bun.sleep(0);
    expect(workers.calls).toHaveLength(2);
    gates.shift()?.();
    await Promise.all(during);
    expect(workers.calls).toHaveLength(2);
  });

  test("no more than maxConcurrent workers are polled at once", async () => {
    const gates: (() => void)[] = [];
    const workers = fakeWorkers(() => new Promise((resolve) => gates.push(() => resolve(new Response("[]")))));
    const poller = new KvEventPoller({ fetch: workers.fetch, maxConcurrent: 2 });
    const polls = ["http://a:1", "http://b:1", "http://c:1", "http://d:1"].map((origin) => poller.poll(origin));
    expect(workers.calls).toEqual(["http://a:1", "http://b:1"]);
    while (gates.length > 0 || workers.calls.length < 4) {
      gates.shift()?.();
      await Bun.sleep(0);
    }
    await Promise.all(polls);
    expect(workers.calls).toEqual(["http://a:1", "http://b:1", "http://c:1", "http://d:1"]);
  });

  test("a failing worker is reported once until it answers again, and its polls never reject", async () => {
    let healthy = false;
    const workers = fakeWorkers(() => (healthy ? Promise.resolve(new Response("[]")) : Promise.reject(new Error("connection refused"))));
    const warnings: unknown[] = [];
    const poller = new KvEventPoller({ fetch: workers.fetch, onWarning: (message, fields) => warnings.push({ message, ...fields }) });
    await poller.poll("http://w:1");
    await poller.poll("http://w:1");
    expect(warnings).toEqual([{ message: "Cannot read the worker's KV cache events", worker: "http://w:1", error: "connection refused" }]);
    healthy = true;
    await poller.poll("http://w:1");
    healthy = false;
    await poller.poll("http://w:1");
    expect(warnings).toHaveLength(2);
  });

  test("an HTTP error answer counts as a failed poll", async () => {
    const workers = fakeWorkers(() => Promise.resolve(new Response('{"detail":"Not Found"}', { status: 404 })));
    const warnings: unknown[] = [];
    const poller = new KvEventPoller({ fetch: workers.fetch, onWarning: (_message, fields) => warnings.push(fields["error"]) });
    await poller.poll("http://w:1");
    expect(warnings).toEqual(["HTTP 404"]);
  });

  test("an answer nested too deep, or declaring a length over the bound, is a failed poll before anything parses it", async () => {
    const deep = `${"[".repeat(300)}${"]".repeat(300)}`;
    const answers = [new Response(deep), new Response(new Uint8Array(8), { headers: { "content-length": String(64 * 1024 * 1024) } })];
    const workers = fakeWorkers(() => Promise.resolve(answers.shift()!));
    const warnings: unknown[] = [];
    const poller = new KvEventPoller({ fetch: workers.fetch, onWarning: (_message, fields) => warnings.push(fields["error"]) });
    await poller.poll("http://w:1");
    await poller.poll("http://w:2");
    expect(warnings).toEqual(["Worker answer nests deeper than 256 levels", `Worker answer is larger than ${16 * 1024 * 1024} bytes`]);
  });
});
