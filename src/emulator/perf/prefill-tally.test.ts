import { describe, expect, test } from "bun:test";
import { at, json, post } from "../test-support.ts";
import { startEmulatedWorker } from "../worker.ts";

function words(count: number): string {
  return Array.from({ length: count }, (_, i) => `w${i}`).join(" ");
}

async function tally(url: string): Promise<unknown> {
  return json(await fetch(`${url}/emulator/prefill`));
}

describe("GET /emulator/prefill", () => {
  test("counts each prefilling phase's prompt and cached tokens, a generation phase only as a request, a rejection not at all", async () => {
    await using worker = startEmulatedWorker({ role: "mixed", tokensPerBlock: 4 });
    const zero = { requests: 0, prompt_tokens: 0, cached_tokens: 0 };
    expect(await tally(worker.url)).toEqual({ context: zero, aggregated: zero, generation: zero });
    const prompt = words(9);
    const context = await json(
      await post(worker.url, "/v1/completions", { prompt, disaggregated_params: { request_type: "context_only" } }),
    );
    const params = { ...(at(context, "choices", 0, "disaggregated_params") as object), request_type: "generation_only" };
    const generation = await post(worker.url, "/v1/completions", { prompt: at(context, "prompt_token_ids"), disaggregated_params: params });
    expect(generation.status).toBe(200);
    await generation.text();
    await post(worker.url, "/v1/completions", { prompt, max_tokens: 1 }).then((r) => r.text());
    await post(worker.url, "/v1/completions", { prompt: `${prompt} [[emu reject=503]]`, max_tokens: 1 }).then((r) => r.text());
    expect(await tally(worker.url)).toEqual({
      context: { requests: 1, prompt_tokens: 9, cached_tokens: 0 },
      aggregated: { requests: 1, prompt_tokens: 9, cached_tokens: 8 },
      generation: { requests: 1, prompt_tokens: 0, cached_tokens: 0 },
    });
  });

  test("answers only GET", async () => {
    await using worker = startEmulatedWorker({ role: "context" });
    expect((await fetch(`${worker.url}/emulator/prefill`, { method: "POST" })).status).toBe(405);
  });
});
