import { describe, expect, test } from "bun:test";
import { eventually, startCluster, type TestCluster } from "./support/cluster.ts";

/** Two models behind one proxy, with an exact and a prefix alias (as in several-models.test.ts). */
function mixedFleet(): Promise<TestCluster> {
  return startCluster({
    contexts: [{ model: "model-a" }, { model: "model-b" }],
    generations: [{ model: "model-a" }, { model: "model-b" }],
    config: {
      maxRetries: 0,
      modelAliases: [
        { from: "claude-sonnet-4", to: "model-b" },
        { from: "gpt-*", to: "model-a" },
      ],
    },
  });
}

const chat = (model: string): object => ({ model, messages: [{ role: "user", content: "which model?" }], max_tokens: 3 });

/** The request log lines written so far, once there are `count`. */
async function requestLines(cluster: TestCluster, count: number): Promise<Record<string, unknown>[]> {
  await eventually(() => cluster.logs.filter((line) => line["msg"] === "request").length >= count, 5000, `${count} request lines`);
  return cluster.logs.filter((line) => line["msg"] === "request");
}

describe("the request log line names the request's model", () => {
  test("the served model it was placed on, and the client's name (capped at 256 characters) when an alias mapped it or nobody serves it", async () => {
    await using cluster = await mixedFleet();
    const longAlias = `gpt-${"x".repeat(10_000)}`;
    const names = ["model-a", "claude-sonnet-4", longAlias, "model-c"];
    for (const name of names) await (await cluster.post("/v1/chat/completions", chat(name))).text();
    const lines = await requestLines(cluster, names.length);
    const models = lines.map((line) => ({ status: line["status"], model: line["model"], requested_model: line["requested_model"] }));
    expect(models).toEqual([
      { status: 200, model: "model-a", requested_model: undefined },
      { status: 200, model: "model-b", requested_model: "claude-sonnet-4" },
      { status: 200, model: "model-a", requested_model: longAlias.slice(0, 256) },
      { status: 404, model: undefined, requested_model: "model-c" },
    ]);
  });

  test("a count_tokens call names the model it was placed on too", async () => {
    await using cluster = await mixedFleet();
    const response = await cluster.post("/v1/messages/count_tokens", {
      model: "claude-sonnet-4",
      messages: [{ role: "user", content: "count me" }],
    });
    await response.text();
    const [line] = await requestLines(cluster, 1);
    expect({ model: line?.["model"], requested_model: line?.["requested_model"] }).toEqual({
      model: "model-b",
      requested_model: "claude-sonnet-4",
    });
  });

  test("a single-model fleet logs its one model, and the client's name beside it when the client named another", async () => {
    await using cluster = await startCluster({ contexts: [{ model: "only" }], generations: [{ model: "only" }] });
    await eventually(() => cluster.proxy.app.placement.pool.servedModels().length === 1, 5000, "the fleet's model learnt");
    for (const name of ["only", "anything"]) await (await cluster.post("/v1/chat/completions", chat(name))).text();
    const lines = await requestLines(cluster, 2);
    expect(lines.map((line) => [line["model"], line["requested_model"]])).toEqual([
      ["only", undefined],
      ["only", "anything"],
    ]);
  });
});
