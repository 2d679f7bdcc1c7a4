/**
 * The emulated worker's lifecycle faults, over raw TCP where fetch would hide them: the context
 * side holding a hand-off's KV until a generation request pulls it, uvicorn's keep-alive close,
 * and the reset of a kept-alive connection's next request.
 */
import { describe, expect, test } from "bun:test";
import { startEmulatedWorker } from "../src/emulator/index.ts";
import { isJsonObject, parseJson, type JsonObject } from "../src/json/json.ts";
import { rawConnect, rawRequest, statuses } from "./support/raw-http.ts";
import { eventually } from "./support/wait.ts";

const D = 7_000_000_123n;

async function askContext(url: string, content: string, id = D): Promise<JsonObject> {
  const response = await fetch(`${url}/v1/chat/completions`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({
      messages: [{ role: "user", content }],
      disaggregated_params: { request_type: "context_only", disagg_request_id: Number(id) },
    }),
  });
  const body = parseJson(await response.text());
  if (!isJsonObject(body)) throw new TypeError("not an object");
  return body;
}

function generationBody(content: string, answer: JsonObject, maxTokens?: number): JsonObject {
  const choice = (answer["choices"] as JsonObject[])[0]!;
  const params = { ...(choice["disaggregated_params"] as JsonObject), request_type: "generation_only" };
  return {
    messages: [{ role: "user", content }],
    prompt_token_ids: answer["prompt_token_ids"]!,
    disaggregated_params: params,
    ...(maxTokens === undefined ? {} : { max_tokens: maxTokens }),
  };
}

async function metricsOf(url: string): Promise<JsonObject> {
  const stats = parseJson(await (await fetch(`${url}/metrics`)).text());
  if (!Array.isArray(stats) || !isJsonObject(stats[0])) throw new TypeError("GET /metrics is not a list of iteration stats");
  return stats[0];
}

describe("held KV on the context side", () => {
  test("a finished context-first hand-off is held until a generation request pulls it, and /metrics shows it", async () => {
    await using context = startEmulatedWorker({ role: "context" });
    await using generation = startEmulatedWorker({ role: "generation" });
    const content = "a b c d [[emu tokens=4]]";
    const answer = await askContext(context.url, content);
    expect(context.heldKvHandoffs()).toBe(1);
    const held = await metricsOf(context.url);
    expect(held["heldKvHandoffs"]).toBe(1);
    expect((held["kvCacheStats"] as JsonObject)["usedNumBlocks"]).toBe(1);
    const reply = await fetch(`${generation.url}/v1/chat/completions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify(generationBody(content, answer, 1)),
    });
    expect(reply.status).toBe(200);
    await reply.text();
    expect(context.heldKvHandoffs()).toBe(0);
    expect((await metricsOf(context.url))["heldKvHandoffs"]).toBe(0);
  });

  test("a hand-off nobody pulls is held for good without kv_transfer_timeout_ms, and released by it when set", async () => {
    await using forever = startEmulatedWorker({ role: "context" });
    await using bounded = startEmulatedWorker({ role: "context", kvTransferTimeoutMs: 50 });
    await askContext(forever.url, "a b [[emu tokens=4]]");
    await askContext(bounded.url, "a b [[emu tokens=4]]");
    expect(bounded.heldKvHandoffs()).toBe(1);
    await eventually(() => bounded.heldKvHandoffs() === 0, 2000, "the timed-out hand-off released");
    expect((await metricsOf(bounded.url))["timedOutKvHandoffs"]).toBe(1);
    expect(forever.heldKvHandoffs()).toBe(1);
  });

  test("a context phase that finished the request holds nothing", async () => {
    await using context = startEmulatedWorker({ role: "context" });
    await askContext(context.url, "a b [[emu finish=stop]]");
    expect(context.heldKvHandoffs()).toBe(0);
  });

  test("a generation request whose hand-off was already pulled fails its KV transfer", async () => {
    await using context = startEmulatedWorker({ role: "context" });
    await using generation = startEmulatedWorker({ role: "generation" });
    const content = "a b [[emu tokens=3]]";
    const body = JSON.stringify(generationBody(content, await askContext(context.url, content)));
    const send = (): Promise<Response> =>
      fetch(`${generation.url}/v1/chat/completions`, { method: "POST", headers: { "content-type": "application/json" }, body });
    expect((await send()).status).toBe(200);
    const again = await send();
    expect(again.status).toBe(500);
    expect(await again.text()).toContain("KV cache transfer failed");
  });
});

const GET_HEALTH = rawRequest("GET", "/health", { host: "worker" });

describe("connection faults", () => {
  test("an idle kept-alive connection is closed once its keep-alive passed since the last response, not before", async () => {
    // The keep-alive is long beside the 50 ms pause so that a loaded machine cannot stretch the
    // pause past it (at 150 ms it did, and the connection closed before the second request).
    await using worker = startEmulatedWorker({ role: "mixed", faults: { keepAliveTimeoutMs: 600 } });
    await using connection = await rawConnect(worker.url);
    connection.write(GET_HEALTH);
    await connection.until((received) => statuses(received).length === 1);
    const answered = performance.now();
    // A second request before the timer fires cancels it; the timer starts again after its response.
    await Bun.sleep(50);
    connection.write(GET_HEALTH);
    await connection.until((received) => statuses(received).length === 2);
    const answeredAgain = performance.now();
    await connection.closed;
    const closed = performance.now();
    expect(closed - answeredAgain).toBeGreaterThanOrEqual(595);
    expect(closed - answered).toBeGreaterThanOrEqual(645);
    expect(worker.connectionFaults().idleClosed).toBe(1);
  });

  test("a request still being served is never closed for idleness", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", faults: { keepAliveTimeoutMs: 30 } });
    await using connection = await rawConnect(worker.url);
    const body = JSON.stringify({ prompt: "x [[emu prefill_ms=200 tokens=2]]" });
    connection.write(GET_HEALTH);
    await connection.until((received) => statuses(received).length === 1);
    connection.write(
      rawRequest(
        "POST",
        "/v1/completions",
        { host: "worker", "content-type": "application/json", "content-length": String(body.length) },
        body,
      ),
    );
    await connection.until((received) => statuses(received).length === 2 && received.includes("tok2"));
    expect(statuses(connection.received)).toEqual([200, 200]);
  });

  test("the next request of a kept-alive connection is reset unread; a fresh connection's first one is served", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", faults: { resetKeptAlive: true } });
    await using connection = await rawConnect(worker.url);
    connection.write(GET_HEALTH);
    await connection.until((received) => statuses(received).length === 1);
    const seen = worker.requests.length;
    connection.write(rawRequest("GET", "/v1/models", { host: "worker" }));
    await connection.closed;
    expect(statuses(connection.received)).toEqual([200]);
    expect(worker.requests.length).toBe(seen);
    expect(worker.connectionFaults().resets).toBe(1);
    const fresh = await fetch(`${worker.url}/v1/models`, { keepalive: false });
    expect(fresh.status).toBe(200);
  });
});
