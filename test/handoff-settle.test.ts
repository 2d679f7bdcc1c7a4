/**
 * Hand-offs the proxy gives up on are settled: the context worker holds a finished hand-off's
 * KV until a generation request pulls it (for good without kv_transfer_timeout_ms), so a request
 * that ends after its context phase answered must not leave it there.
 */
import { describe, expect, test } from "bun:test";
import { startCluster, eventually } from "./support/cluster.ts";

const chat = (content: string, stream: boolean) => ({ model: "m", messages: [{ role: "user", content }], stream, max_tokens: 8 });

async function metric(url: string, line: string): Promise<number> {
  const text = await (await fetch(`${url}/prometheus/metrics`)).text();
  const found = text.split("\n").find((entry) => entry.startsWith(line));
  return found === undefined ? 0 : Number(found.slice(line.length).trim());
}

describe("settling hand-offs", () => {
  for (const stream of [false, true]) {
    test(`a client leaving right after the hand-off leaves no unclaimed KV on the context worker (${stream ? "streamed" : "non-streamed"})`, async () => {
      // The generation worker queues the request 200 ms before pulling its KV: aborted then, it never would.
      await using cluster = await startCluster();
      const [context] = cluster.contexts;
      const client = new AbortController();
      const reply = cluster
        .post("/v1/chat/completions", chat("leave [[emu gen.queue_ms=200 tokens=4]]", stream), { signal: client.signal })
        .catch(() => undefined);
      await context!.waitFor((record) => record.phase === "context" && record.status === "finished");
      client.abort();
      await reply;
      await eventually(() => context!.heldKvHandoffs() === 0, 1000, "the hand-off released within 1 s");
      await eventually(
        async () => (await metric(cluster.url, 'disagg_proxy_handoffs_settled_total{reason="client_gone"}')) === 1,
        1000,
        "the settle counted",
      );
    });
  }

  test("a non-streamed generation that runs on after its client left keeps the request's --max-inflight slot until it ends", async () => {
    await using cluster = await startCluster({ generations: [{ tokenMs: 20 }], config: { maxInflight: 1 } });
    const [generation] = cluster.generations;
    const client = new AbortController();
    const reply = cluster
      .post("/v1/chat/completions", { ...chat("leave [[emu tokens=40]]", false), max_tokens: 40 }, { signal: client.signal })
      .catch(() => undefined);
    await generation!.waitFor((record) => record.phase === "generation");
    client.abort();
    await reply;
    await eventually(() => cluster.logs.some((line) => line["outcome"] === "client_disconnected"), 1000, "the request ended");
    // The generation (40 tokens at 20 ms) still runs: the slot is still taken.
    const refused = await cluster.post("/v1/chat/completions", chat("hi", false));
    expect(refused.status).toBe(429);
    await refused.text();
    await generation!.waitFor((record) => record.phase === "generation" && record.status === "finished");
    await eventually(
      async () => {
        const response = await cluster.post("/v1/chat/completions", chat("hi", false));
        await response.text();
        return response.status === 200;
      },
      2000,
      "the slot freed once the generation ended",
    );
  });

  test("a generation leg its worker refused (503) leaves no unclaimed KV: the hand-off is settled on another generation worker", async () => {
    await using cluster = await startCluster({ generations: [{ faults: { rejectStatus: 503 } }, {}] });
    const [context] = cluster.contexts;
    const response = await cluster.post("/v1/chat/completions", chat("refused", false));
    expect(response.status).toBe(503);
    await eventually(() => context!.heldKvHandoffs() === 0, 1000, "the hand-off released");
    // The worker releases the KV before the settle's answer reaches the proxy, which counts it then.
    await eventually(
      async () => (await metric(cluster.url, 'disagg_proxy_handoffs_settled_total{reason="generation_unsent"}')) === 1,
      1000,
      "the settle counted",
    );
    const settle = cluster.generations[1]!.requests.find((record) => record.phase === "generation");
    expect(settle?.body).toMatchObject({ max_tokens: 1, stream: false });
  });

  test("a settle turned away (503) by an overloaded generation worker is tried again until the worker takes it", async () => {
    const faults: { rejectStatus?: number } = { rejectStatus: 503 };
    await using cluster = await startCluster({ generations: [{ faults }] });
    const [context] = cluster.contexts;
    const generation = cluster.generations[0]!;
    expect((await cluster.post("/v1/chat/completions", chat("overloaded", false))).status).toBe(503);
    // The request's own attempt and three settles turned away; then the overload passes.
    await eventually(
      () => generation.requests.filter((record) => record.phase === "generation").length >= 4,
      2000,
      "three settles turned away",
    );
    delete faults.rejectStatus;
    await eventually(() => context!.heldKvHandoffs() === 0, 3000, "the hand-off released once the worker takes the settle");
  });

  test("a proxy drained while a request waits on its generation worker leaves no unclaimed KV", async () => {
    await using cluster = await startCluster();
    const [context] = cluster.contexts;
    const reply = cluster.post("/v1/chat/completions", chat("drained [[emu gen.queue_ms=500 tokens=2]]", true)).then(
      (response) => response.text(),
      () => "",
    );
    await cluster.generations[0]!.waitFor((record) => record.phase === "generation");
    await cluster.proxy.drain(50);
    await reply;
    await eventually(() => context!.heldKvHandoffs() === 0, 1000, "the hand-off released");
    expect(cluster.logs.some((line) => String(line["msg"]).startsWith("hand-off settled") && line["reason"] === "draining")).toBe(true);
  });

  test("a request served in full settles nothing", async () => {
    await using cluster = await startCluster();
    const response = await cluster.post("/v1/chat/completions", chat("whole", true));
    await response.text();
    expect(cluster.contexts[0]!.heldKvHandoffs()).toBe(0);
    expect(await metric(cluster.url, "disagg_proxy_handoffs_settled_total")).toBe(0);
  });
});
