import { describe, expect, test } from "bun:test";
import { jsonInteger } from "../json/json.ts";
import { startEmulatedWorker } from "./index.ts";
import { post } from "./test-support.ts";

const slowChat = { messages: [{ role: "user", content: "x [[emu tokens=200 token_ms=20]]" }], stream: true };

describe("abort detection", () => {
  test("a client leaving mid-stream marks the request aborted and stops its generation", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const controller = new AbortController();
    const response = await post(worker.url, "/v1/chat/completions", slowChat, { signal: controller.signal });
    const reader = response.body?.getReader();
    await reader?.read();
    expect(worker.running()).toBe(1);
    controller.abort();
    const record = await worker.waitFor((r) => r.status === "aborted");
    expect(record.phase).toBe("aggregated");
    expect(worker.running()).toBe(0);
  });

  test("a client leaving during the prefill of a non-streamed request marks it aborted", async () => {
    await using worker = startEmulatedWorker({ role: "context", prefillMs: 5000 });
    const controller = new AbortController();
    const params = { request_type: "context_only", disagg_request_id: jsonInteger(3n) };
    const pending = post(worker.url, "/v1/completions", { prompt: "x", disaggregated_params: params }, { signal: controller.signal });
    await worker.waitFor((r) => r.phase === "context");
    controller.abort();
    expect(
      await pending.then(
        () => "answered",
        () => "aborted",
      ),
    ).toBe("aborted");
    await worker.waitFor((r) => r.phase === "context" && r.status === "aborted");
    expect(worker.running()).toBe(0);
  });

  test("a client leaving before the first byte of a stream marks it aborted", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", prefillMs: 5000 });
    const controller = new AbortController();
    const pending = post(worker.url, "/v1/chat/completions", slowChat, { signal: controller.signal }).catch(() => undefined);
    await worker.waitFor((r) => r.phase === "aggregated");
    controller.abort();
    await pending;
    await worker.waitFor((r) => r.status === "aborted");
    expect(worker.running()).toBe(0);
  });

  test("a finished request stays finished and leaves nothing running", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    await (await post(worker.url, "/v1/chat/completions", { ...slowChat, messages: [{ role: "user", content: "y" }] })).text();
    await (await post(worker.url, "/v1/responses", { input: "z" })).text();
    expect(worker.requests.map((r) => r.status)).toEqual(["finished", "finished"]);
    expect(worker.running()).toBe(0);
  });

  test("stop() ends the requests in flight as aborted and closes their connections", async () => {
    const worker = startEmulatedWorker({ role: "mixed" });
    const response = await post(worker.url, "/v1/chat/completions", slowChat);
    const reader = response.body?.getReader();
    await reader?.read();
    await worker.stop();
    expect(worker.requests[0]?.status).toBe("aborted");
    expect(worker.running()).toBe(0);
    expect(
      await reader?.read().then(
        () => "more",
        () => "closed",
      ),
    ).toBe("closed");
  });
});

describe("waitFor", () => {
  test("resolves with a request recorded before it was called", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    await fetch(`${worker.url}/health`);
    expect((await worker.waitFor((r) => r.path === "/health")).seq).toBe(0);
  });

  test("rejects when nothing matches within the timeout", async () => {
    await using worker = startEmulatedWorker({ role: "mixed" });
    const outcome = await worker
      .waitFor((r) => r.path === "/never", 20)
      .then(
        () => "matched",
        (error: unknown) => String(error),
      );
    expect(outcome).toContain("within 20 ms");
  });
});
