import { describe, expect, test } from "bun:test";
import { eventually, startCluster } from "./support/cluster.ts";

/** A context worker with a fixed answer body (a real loopback server standing in for a broken worker). */
function brokenContext(body: () => string | Uint8Array, contentType = "application/json"): Bun.Server<undefined> {
  return Bun.serve({
    hostname: "127.0.0.1",
    port: 0,
    idleTimeout: 0,
    fetch(request) {
      const path = new URL(request.url).pathname;
      if (path === "/health") return new Response(null, { status: 200 });
      if (path === "/server_info") return Response.json({});
      return new Response(body(), { headers: { "content-type": contentType } });
    },
  });
}

const chat = { model: "m", messages: [{ role: "user", content: "x" }], max_tokens: 3 };

describe("hostile bytes from workers", () => {
  const cases: [string, () => string | Uint8Array, RegExp][] = [
    ["an answer that is not JSON", () => "<html>oops</html>", /not valid JSON/],
    ["an answer that is not UTF-8", () => new Uint8Array([0x7b, 0x22, 0xff, 0xfe, 0x22, 0x7d]), /not valid UTF-8/],
    ["an answer that is a JSON list", () => "[1,2,3]", /not a JSON object/],
    ["an answer missing its hand-off", () => JSON.stringify({ choices: [{ index: 0, finish_reason: "length", message: { content: "a" } }] }), /disaggregated params/],
    ["an answer with two choices", () => JSON.stringify({ choices: [{}, {}] }), /2 choices/],
  ];
  test.each(cases)("%s gets a clear 502 and the leg is closed", async (_name, body, message) => {
    using ctx = brokenContext(body);
    await using cluster = await startCluster({ config: { contextServers: [ctx.url.origin], maxRetries: 0 } });
    const response = await cluster.post("/v1/chat/completions", chat);
    expect(response.status).toBe(502);
    const envelope = (await response.json()) as { object: string; message: string };
    expect(envelope.object).toBe("error");
    expect(envelope.message).toMatch(message);
    expect(JSON.stringify(envelope)).not.toContain("127.0.0.1");
    await eventually(() => cluster.proxy.app.placement.table.active() === 0);
  });

  test("an answer larger than --max-answer-bytes is refused without being read whole", async () => {
    const huge = `{"pad":"${"x".repeat(300_000)}"}`;
    using ctx = brokenContext(() => huge);
    await using cluster = await startCluster({ config: { contextServers: [ctx.url.origin], maxRetries: 0, maxAnswerBytes: 100_000 } });
    const response = await cluster.post("/v1/chat/completions", chat);
    expect(response.status).toBe(502);
    expect(((await response.json()) as { message: string }).message).toContain("larger than 100000 bytes");
  });
});
