/**
 * A generation leg that fails before its first byte may never have pulled its hand-off's KV (a
 * worker failing before it reads the request does not): unless the worker's answer proves the
 * pull (a KV transfer error), the hand-off is claimed, so the context worker holds nothing once
 * the request restarted on a fresh pair.
 */

import { describe, expect, test } from "bun:test";
import { eventually, startCluster } from "./support/cluster.ts";

const chat = (content: string, stream: boolean) => ({
  model: "emulated-model",
  messages: [{ role: "user", content }],
  max_tokens: 3,
  stream,
});

async function metric(url: string, line: string): Promise<number> {
  const text = await (await fetch(`${url}/prometheus/metrics`)).text();
  const found = text.split("\n").find((entry) => entry.startsWith(line));
  return found === undefined ? 0 : Number(found.slice(line.length).trim());
}

describe("a generation worker that fails every request before its first byte", () => {
  for (const schedule of ["context_first", "generation_first"] as const) {
    test(`${schedule}: every client is answered by a fresh pair, and no hand-off stays held on a context worker`, async () => {
      await using cluster = await startCluster({
        contexts: [{}, {}],
        generations: [{ faults: { rejectStatus: 500 } }, {}],
        // One failing worker must not be ejected before it failed enough requests to show the rule.
        config: { schedule, outlierFailures: 1000 },
      });
      const answers = await Promise.all(
        Array.from({ length: 8 }, (_, i) => cluster.post("/v1/chat/completions", chat(`request ${i}`, i % 2 === 0))),
      );
      for (const answer of answers) expect(answer.status).toBe(200);
      await Promise.all(answers.map((answer) => answer.text()));
      const failing = cluster.generations[0]!;
      expect(failing.requests.filter((r) => r.phase === "generation").length).toBeGreaterThan(0);
      await eventually(() => cluster.proxy.app.handoffs.pending === 0, 3000, "settles done");
      expect(cluster.contexts.map((worker) => worker.heldKvHandoffs())).toEqual([0, 0]);
      // A settle never goes back to the worker the leg failed on.
      const settles = failing.requests.filter((r) => r.phase === "generation" && JSON.stringify(r.body).includes('"max_tokens":1'));
      expect(settles).toEqual([]);
      if (schedule === "context_first") {
        expect(await metric(cluster.url, 'disagg_proxy_handoffs_settled_total{reason="generation_failed"}')).toBeGreaterThan(0);
      }
    });
  }
});
