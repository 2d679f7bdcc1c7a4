import { describe, expect, test } from "bun:test";
import { startCluster } from "./support/cluster.ts";

interface Envelope {
  object: string;
  message: string;
  type: string;
  code: number;
}

const cases: [string, string, string, number, RegExp][] = [
  ["a body that is not JSON", "/v1/chat/completions", "{not json", 400, /not valid JSON/],
  ["a body that is not an object", "/v1/chat/completions", "[1,2]", 400, /must be a JSON object/],
  [
    "a chat body without model",
    "/v1/chat/completions",
    JSON.stringify({ messages: [{ role: "user", content: "x" }] }),
    400,
    /model is required/,
  ],
  ["a chat body without messages", "/v1/chat/completions", JSON.stringify({ model: "m" }), 400, /messages is required/],
  [
    "a chat body with empty messages",
    "/v1/chat/completions",
    JSON.stringify({ model: "m", messages: [] }),
    400,
    /messages must not be empty/,
  ],
  ["a completions body without prompt", "/v1/completions", JSON.stringify({ model: "m" }), 400, /prompt is required/],
  [
    "a completions prompt of several strings",
    "/v1/completions",
    JSON.stringify({ model: "m", prompt: ["a", "b"] }),
    400,
    /single string prompt or a list of token ids/,
  ],
  [
    "a completions prompt that is an empty list",
    "/v1/completions",
    JSON.stringify({ model: "m", prompt: [] }),
    400,
    /prompt must not be an empty list/,
  ],
  [
    "a stream flag that is not a boolean",
    "/v1/chat/completions",
    JSON.stringify({ model: "m", messages: [{}], stream: "yes" }),
    400,
    /stream must be a boolean/,
  ],
];

describe("bad input", () => {
  test.each(cases)("%s gets a clear 4xx and reaches no worker", async (_name, path, body, status, message) => {
    await using cluster = await startCluster();
    const response = await cluster.post(path, body);
    expect(response.status).toBe(status);
    const envelope = (await response.json()) as Envelope;
    expect(envelope.object).toBe("error");
    expect(envelope.code).toBe(status);
    expect(envelope.message).toMatch(message);
    expect(cluster.contexts[0]!.requests.filter((r) => r.method === "POST")).toHaveLength(0);
    expect(cluster.generations[0]!.requests.filter((r) => r.method === "POST")).toHaveLength(0);
    const after = await cluster.post("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "still serving" }] });
    expect(after.status).toBe(200);
  });

  test("a body over --max-body-bytes is a 413 and reaches no worker", async () => {
    await using cluster = await startCluster({ config: { maxBodyBytes: 1000 } });
    const response = await cluster.post("/v1/chat/completions", { model: "m", messages: [{ role: "user", content: "x".repeat(2000) }] });
    expect(response.status).toBe(413);
    expect(((await response.json()) as Envelope).message).toMatch(/larger than 1000 bytes/);
    expect(cluster.contexts[0]!.requests.filter((r) => r.method === "POST")).toHaveLength(0);
  });

  test("an unknown route is a 404 and a wrong method a 405, in the same envelope", async () => {
    await using cluster = await startCluster();
    const missing = await fetch(`${cluster.url}/v1/nothing`);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as Envelope).object).toBe("error");
    const wrong = await fetch(`${cluster.url}/v1/chat/completions`);
    expect(wrong.status).toBe(405);
    expect(((await wrong.json()) as Envelope).type).toBe("MethodNotAllowed");
  });

  test("a 405 names in Allow the methods its path takes (RFC 9110 §15.5.6)", async () => {
    await using cluster = await startCluster();
    const get = await fetch(`${cluster.url}/v1/chat/completions`);
    expect(get.status).toBe(405);
    expect(get.headers.get("allow")).toBe("POST");
    await get.arrayBuffer();
    const post = await fetch(`${cluster.url}/health`, { method: "POST" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET");
    await post.arrayBuffer();
    // Only a 405 carries it.
    const missing = await fetch(`${cluster.url}/v1/nothing`);
    expect(missing.headers.get("allow")).toBeNull();
    await missing.arrayBuffer();
  });
});
