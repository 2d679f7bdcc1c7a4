import { describe, expect, test } from "bun:test";
import { startEmulatedWorker } from "../index.ts";
import { post } from "../test-support.ts";

function gauge(text: string, name: string): number | undefined {
  const line = text.split("\n").find((candidate) => candidate.startsWith(`${name}{`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(" ") + 1));
}

describe("GET /prometheus/metrics", () => {
  test("reports running requests, the configured queue and KV cache use under trtllm-serve's gauge names", async () => {
    await using worker = startEmulatedWorker({
      role: "mixed",
      model: "m3",
      reportedWaiting: 7,
      tokenMs: 20,
      kvCacheBlocks: 100,
      tokensPerBlock: 1,
    });
    const idle = await (await fetch(`${worker.url}/prometheus/metrics`)).text();
    expect(idle).toContain('trtllm_num_requests_running{model_name="m3",engine_type="trtllm"} 0');
    expect(gauge(idle, "trtllm_num_requests_waiting")).toBe(7);
    expect(gauge(idle, "trtllm_kv_cache_utilization")).toBe(0);
    // The iteration stats of GET /metrics say the same (numQueuedRequests is what the gauge is set from).
    expect(await (await fetch(`${worker.url}/metrics`)).json()).toMatchObject([{ numActiveRequests: 0, numQueuedRequests: 7 }]);
    const running = post(worker.url, "/v1/completions", { model: "m3", prompt: "one two three four", max_tokens: 20 });
    await worker.waitFor((record) => record.phase !== "other");
    expect(gauge(await (await fetch(`${worker.url}/prometheus/metrics`)).text(), "trtllm_num_requests_running")).toBe(1);
    await (await running).text();
    const after = await (await fetch(`${worker.url}/prometheus/metrics`)).text();
    expect(gauge(after, "trtllm_num_requests_running")).toBe(0);
    expect(gauge(after, "trtllm_kv_cache_utilization")).toBeGreaterThan(0);
  });
});
