import Anthropic, { APIError } from "@anthropic-ai/sdk";
import { describe, expect, test } from "bun:test";
import { isJsonObject } from "../src/json/json.ts";
import { startCluster } from "./support/cluster.ts";

/** A hand-off's one-token settle (pipeline/handoff/settler.ts), not a client's request. */
function isSettle(body: unknown): boolean {
  return isJsonObject(body) && body["max_tokens"] === 1 && body["stream"] === false;
}

/**
 * Claude Code is not installed here; the Anthropic SDK (the client Claude Code is built on)
 * shows what an Anthropic client does with the proxy's errors: a 529 overloaded_error is
 * retried with back-off, exactly as against api.anthropic.com.
 */
describe("an overloaded generation worker, seen by the Anthropic SDK", () => {
  test("the SDK retries the 529 and the retry succeeds on another worker", async () => {
    await using cluster = await startCluster({ generations: [{ faults: { rejectStatus: 503 } }, {}], config: { maxRetries: 0 } });
    const statuses: number[] = [];
    const client = new Anthropic({
      baseURL: cluster.url,
      apiKey: "unused",
      maxRetries: 2,
      fetch: async (input: string | URL | Request, init?: RequestInit) => {
        const response = await fetch(input, init);
        statuses.push(response.status);
        return response;
      },
    });
    for (let call = 0; call < 2; call++) {
      const message = await client.messages.create({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "hello" }] });
      expect(message.type).toBe("message");
    }
    // Round robin sends one of the two calls to the overloaded worker first.
    expect(statuses).toContain(529);
    expect(statuses.filter((status) => status === 200)).toHaveLength(2);
    expect(statuses.every((status) => status === 200 || status === 529)).toBe(true);
  }, 20_000);

  test("when every attempt is overloaded the SDK gives up with Anthropic's overloaded_error after its retries", async () => {
    await using cluster = await startCluster({ generations: [{ faults: { rejectStatus: 503 } }], config: { maxRetries: 0 } });
    const client = new Anthropic({ baseURL: cluster.url, apiKey: "unused", maxRetries: 1 });
    const failure = await client.messages
      .create({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "hello" }] })
      .catch((error: unknown) => error);
    if (!(failure instanceof APIError)) throw new Error(`Expected an APIError, got ${String(failure)}`);
    const error = failure;
    expect(error.status).toBe(529);
    expect(error.error).toMatchObject({ type: "error", error: { type: "overloaded_error" } });
    // One attempt and one retry reached the worker (besides the one-token settles of the hand-offs they left: handoff-settle.test.ts).
    expect(cluster.generations[0]!.requests.filter((r) => r.phase === "generation" && !isSettle(r.body))).toHaveLength(2);
  }, 20_000);
});
