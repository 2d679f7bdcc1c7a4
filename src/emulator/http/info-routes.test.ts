import { describe, expect, test } from "bun:test";
import { startEmulatedWorker } from "../index.ts";
import { json, post } from "../test-support.ts";

describe("non-model routes", () => {
  test("GET /health answers 200 with an empty body", async () => {
    await using worker = startEmulatedWorker({ role: "context" });
    const response = await fetch(`${worker.url}/health`);
    expect(response.status).toBe(200);
    expect(await response.text()).toBe("");
    expect(worker.requests[0]).toMatchObject({ method: "GET", path: "/health", phase: "other", status: "finished" });
  });

  test("GET /server_info reports ctx_info_endpoint as a list, like a real worker", async () => {
    await using worker = startEmulatedWorker({ role: "generation", model: "m1" });
    expect(await json(await fetch(`${worker.url}/server_info`))).toEqual({
      disaggregated_params: { ctx_info_endpoint: [worker.url], ctx_dp_rank: 0 },
      role: "generation",
      model: "m1",
      kv_cache_hash_algo: "v1_block_key",
    });
  });

  test("GET /v1/models lists the one served model", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", model: "m2" });
    const body = await json(await fetch(`${worker.url}/v1/models`));
    expect(body).toMatchObject({ object: "list", data: [{ id: "m2", object: "model", owned_by: "tensorrt_llm" }] });
  });

  test("GET /version answers the release the worker plays, the newest by default", async () => {
    await using newest = startEmulatedWorker({ role: "mixed" });
    await using older = startEmulatedWorker({ role: "mixed", protocolVersion: "1.3.0rc14" });
    expect(await json(await fetch(`${newest.url}/version`))).toEqual({ version: "1.4.0rc0" });
    expect(await json(await fetch(`${older.url}/version`))).toEqual({ version: "1.3.0rc14" });
  });

  test("POST /v1/messages/count_tokens counts the system prompt and message words", async () => {
    await using worker = startEmulatedWorker({ role: "context" });
    const body = {
      model: "m",
      system: [{ type: "text", text: "be kind" }],
      messages: [
        { role: "user", content: [{ type: "text", text: "one two three" }] },
        { role: "assistant", content: "four" },
      ],
    };
    expect(await json(await post(worker.url, "/v1/messages/count_tokens", body))).toEqual({ input_tokens: 6 });
  });

  test("an unknown path is 404 and a wrong method 405, in FastAPI's shape", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const missing = await fetch(`${worker.url}/nope`);
    expect(missing.status).toBe(404);
    expect(await json(missing)).toEqual({ detail: "Not Found" });
    const wrongMethod = await fetch(`${worker.url}/v1/chat/completions`);
    expect(wrongMethod.status).toBe(405);
    expect(await json(wrongMethod)).toEqual({ detail: "Method Not Allowed" });
  });

  test("a model request whose body is not JSON is refused with 400", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const response = await post(worker.url, "/v1/chat/completions", "{not json");
    expect(response.status).toBe(400);
    expect(worker.requests[0]).toMatchObject({ phase: "other", status: "finished", body: undefined });
  });
});
