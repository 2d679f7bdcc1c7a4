import { describe, expect, test } from "bun:test";
import { isJsonObject, readInteger } from "../src/json/json.ts";
import { startCluster } from "./support/cluster.ts";

const CHAT = { model: "m", messages: [{ role: "user", content: "héllo there" }], max_tokens: 3, temperature: 0.5 };

describe.each(["context_first", "generation_first"] as const)("%s: --worker-msgpack", (schedule) => {
  test.each([false, true])("stream %p: both legs get msgpack bodies with X-TRTLLM-Msgpack: 1 and the 63-bit id exact", async (stream) => {
    await using c = await startCluster({ config: { schedule, workerMsgpack: true } });
    const response = await c.post("/v1/chat/completions", { ...CHAT, stream });
    expect(response.status).toBe(200);
    const text = await response.text();
    expect(text).toContain("tok");
    const id = BigInt(response.headers.get("x-trtllm-engine-request-id")!);
    expect(id).toBeGreaterThan(2n ** 40n);
    for (const leg of [
      c.contexts[0]!.requests.find((r) => r.phase === "context")!,
      c.generations[0]!.requests.find((r) => r.phase === "generation")!,
    ]) {
      expect(leg.headers["x-trtllm-msgpack"]).toBe("1");
      expect(leg.headers["content-type"]).toBe("application/json");
      expect(leg.disaggRequestId).toBe(id);
      const params = isJsonObject(leg.body) ? leg.body["disaggregated_params"] : undefined;
      expect(readInteger(isJsonObject(params) ? params["disagg_request_id"] : undefined)).toBe(id);
      expect(isJsonObject(leg.body) && leg.body["temperature"]).toBe(0.5);
    }
  });
});

test("without --worker-msgpack bodies go as JSON, without the header", async () => {
  await using c = await startCluster();
  await (await c.post("/v1/chat/completions", CHAT)).text();
  const leg = c.contexts[0]!.requests.find((r) => r.phase === "context")!;
  expect(leg.headers["x-trtllm-msgpack"]).toBeUndefined();
  expect(isJsonObject(leg.body) && leg.body["temperature"]).toBe(0.5);
});
