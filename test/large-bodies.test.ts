import { describe, expect, test } from "bun:test";
import { isJsonObject, type JsonObject } from "../src/json/json.ts";
import { startCluster } from "./support/cluster.ts";

/**
 * Large bodies travel as bytes (the client's, or the context answer's token ids) spliced with
 * the proxy's fields: what each worker receives must be exactly what the proxy would have
 * written had it parsed and serialised everything, whatever the codec.
 */

const IDS = Array.from({ length: 30_000 }, (_, i) => 1000 + ((i * 7919) % 29_000));
const WORDS = Array.from({ length: 40_000 }, (_, i) => `w${i % 997}`).join(" ");
const LONG = "é世x".repeat(30_000);

function body(record: { body: unknown } | undefined): JsonObject {
  if (record === undefined || !isJsonObject(record.body)) throw new TypeError("expected a recorded JSON body");
  return record.body;
}

describe.each([false, true])("worker msgpack %p", (workerMsgpack) => {
  test("a long id prompt reaches both workers as the client's ids; a long text prompt's context ids reach the generation worker", async () => {
    await using cluster = await startCluster({ config: { workerMsgpack } });
    const completions = await cluster.post("/v1/completions", { model: "m", prompt: IDS, max_tokens: 3, note: LONG });
    expect(completions.status).toBe(200);
    await completions.text();
    const chat = await cluster.post("/v1/chat/completions", {
      model: "m",
      messages: [{ role: "user", content: WORDS }],
      max_tokens: 3,
      stream: true,
    });
    expect(chat.status).toBe(200);
    expect(await chat.text()).toContain("[DONE]");
    const [ctxCompletion, ctxChat] = cluster.contexts[0]!.requests.filter((r) => r.phase === "context");
    const [genCompletion, genChat] = cluster.generations[0]!.requests.filter((r) => r.phase === "generation");
    expect(body(ctxCompletion)["prompt"]).toEqual(IDS);
    expect(body(genCompletion)["prompt"]).toEqual(IDS);
    expect(body(genCompletion)["note"]).toBe(LONG);
    expect(body(ctxChat)["messages"]).toEqual([{ role: "user", content: WORDS }]);
    const ids = body(genChat)["prompt_token_ids"];
    expect(Array.isArray(ids) && ids.length).toBe(40_000);
    expect(Array.isArray(ids) && ids.every((id) => typeof id === "number")).toBe(true);
    expect(body(genChat)["stream"]).toBe(true);
  });
});

test("the generation worker gets the same ids whether the context answer's ids travel as bytes or parsed", async () => {
  const sent: unknown[] = [];
  for (const workerMsgpack of [false, true]) {
    await using cluster = await startCluster({ config: { workerMsgpack } });
    await (await cluster.post("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: WORDS }], max_tokens: 3 })).text();
    sent.push(body(cluster.generations[0]!.requests.find((r) => r.phase === "generation"))["prompt_token_ids"]);
  }
  expect(sent[0]).toEqual(sent[1]);
});
