/**
 * Overload no worker can take is the client's status (429, 503; 529 on /v1/messages) with
 * Retry-After, streamed or not: never a 200 at the stream-start wait followed by an in-band
 * error (real-clients.md: Claude Code then retried non-streamed and showed "529 … check your
 * inference gateway"; Codex printed "stream disconnected").
 */

import { describe, expect, test } from "bun:test";
import { startCluster } from "./support/cluster.ts";

const chat = (stream: boolean) => ({ model: "emulated-model", messages: [{ role: "user", content: "hi" }], max_tokens: 3, stream });
const message = (stream: boolean) => ({ model: "emulated-model", max_tokens: 3, stream, messages: [{ role: "user", content: "hi" }] });

describe("every context worker overloaded", () => {
  for (const schedule of ["context_first", "generation_first"] as const) {
    for (const status of [503, 429]) {
      test(`${schedule}, ${status}: streamed and not, chat gets ${status} and Anthropic ${status === 503 ? 529 : 429}, each with Retry-After`, async () => {
        // Upstream's defaults: one retry, 1 s apart, and the stream opens at 1 s.
        await using cluster = await startCluster({
          contexts: [{ faults: { rejectStatus: status } }, { faults: { rejectStatus: status } }],
          config: { schedule, maxRetries: 1, retryDelayMs: 1000, streamStartWaitMs: 1000 },
        });
        for (const stream of [true, false]) {
          const openai = await cluster.post("/v1/chat/completions", chat(stream));
          expect(openai.status).toBe(status);
          expect(openai.headers.get("retry-after")).not.toBeNull();
          expect(openai.headers.get("content-type")).toContain("application/json");
          await openai.text();
          const anthropic = await cluster.post("/v1/messages", message(stream));
          expect(anthropic.status).toBe(status === 503 ? 529 : 429);
          expect(anthropic.headers.get("retry-after")).not.toBeNull();
          const body = (await anthropic.json()) as { type: string; error: { type: string } };
          expect(body).toMatchObject({ type: "error", error: { type: status === 503 ? "overloaded_error" : "rate_limit_error" } });
        }
      }, 20_000);
    }
  }

  test("a retry that can begin before the stream opens is still made: a short overload is ridden out", async () => {
    await using cluster = await startCluster({
      contexts: [{ faults: { rejectStatus: 503 } }, {}],
      config: { maxRetries: 1, retryDelayMs: 20, streamStartWaitMs: 1000, contextRouter: "round_robin" },
    });
    const answers = await Promise.all([0, 1, 2, 3].map(() => cluster.post("/v1/chat/completions", chat(true))));
    for (const answer of answers) expect(answer.status).toBe(200);
    await Promise.all(answers.map((answer) => answer.text()));
  });
});
