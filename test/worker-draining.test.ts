/**
 * A draining worker (upstream's RequestTracker, tensorrt_llm/serve/request_tracker.py @
 * 6953e49d): it refuses new requests with "TensorRT-LLM is draining" while those it holds run
 * on. The proxy handles it as a starting worker: out of rotation until a health check passes,
 * the leg elsewhere outside --max-retries, no client error.
 */

import { describe, expect, test } from "bun:test";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { startCluster } from "./support/cluster.ts";

const chat = (content: string, stream = false) => ({
  model: "emulated-model",
  messages: [{ role: "user", content }],
  max_tokens: 3,
  stream,
});

describe("the emulated worker while it drains", () => {
  test("a new model request answers 503 'TensorRT-LLM is draining'; one already running finishes; /health is unchanged", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const post = (content: string): Promise<Response> =>
      fetch(`${worker.url}/v1/chat/completions`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(chat(content)),
      });
    const running = post("[[emu prefill_ms=300]] started before the drain");
    await worker.waitFor((r) => r.phase === "aggregated");
    worker.startDraining();
    const refused = await post("after the drain");
    expect(refused.status).toBe(503);
    expect(await refused.json()).toEqual({
      object: "error",
      message: "TensorRT-LLM is draining",
      type: "ServiceUnavailableError",
      param: null,
      code: 503,
    });
    expect((await running).status).toBe(200);
    expect((await fetch(`${worker.url}/health`)).status).toBe(200);
    expect(worker.requests.filter((r) => r.phase === "aggregated")).toHaveLength(1);
  });
});

describe("the proxy in front of a draining worker", () => {
  for (const schedule of ["context_first", "generation_first"] as const) {
    test(`${schedule}: a draining context worker is left for the other one, every client answered 200, nothing ejected`, async () => {
      await using cluster = await startCluster({ contexts: [{}, {}], config: { schedule, maxRetries: 0, outlierFailures: 1 } });
      const [draining, other] = cluster.contexts;
      draining!.startDraining();
      const answers = await Promise.all(
        Array.from({ length: 6 }, (_, i) => cluster.post("/v1/chat/completions", chat(`request ${i}`, i % 2 === 0))),
      );
      for (const answer of answers) expect(answer.status).toBe(200);
      await Promise.all(answers.map((answer) => answer.text()));
      expect(draining!.requests.filter((r) => r.phase === "context")).toHaveLength(0);
      expect(other!.requests.filter((r) => r.phase === "context")).toHaveLength(6);
      const said = cluster.logs.filter((line) => line["state"] === "draining");
      expect(said.length).toBeGreaterThan(0);
      expect(said[0]!["msg"]).toBe("context leg: the worker answered that it is draining; out of rotation until its health check passes");
      expect(cluster.logs.some((line) => String(line["msg"]).includes("ejected"))).toBe(false);
    });
  }

  test("a draining generation worker is left for the other one; no hand-off stays held", async () => {
    await using cluster = await startCluster({ generations: [{}, {}], config: { maxRetries: 0 } });
    const [draining, other] = cluster.generations;
    draining!.startDraining();
    const answers = await Promise.all(
      Array.from({ length: 4 }, (_, i) => cluster.post("/v1/chat/completions", chat(`gen ${i}`, i % 2 === 1))),
    );
    for (const answer of answers) expect(answer.status).toBe(200);
    await Promise.all(answers.map((answer) => answer.text()));
    expect(draining!.requests.filter((r) => r.phase === "generation")).toHaveLength(0);
    expect(other!.requests.filter((r) => r.phase === "generation")).toHaveLength(4);
    expect(cluster.contexts[0]!.heldKvHandoffs()).toBe(0);
  });
});
