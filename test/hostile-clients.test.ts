import { describe, expect, test } from "bun:test";
import { startCluster } from "./support/cluster.ts";

/** Sends raw HTTP over TCP, trickling the body; resolves with what the server answered. */
async function trickle(url: URL, body: string, byteEveryMs: number): Promise<string> {
  let answer = "";
  let closed!: () => void;
  const done = new Promise<void>((resolve) => (closed = resolve));
  const socket = await Bun.connect({
    hostname: url.hostname,
    port: Number(url.port),
    socket: {
      data(_socket, data) {
        answer += new TextDecoder().decode(data);
      },
      close() {
        closed();
      },
    },
  });
  socket.write(`POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`);
  for (const char of body) {
    if (answer !== "") break;
    socket.write(char);
    await Bun.sleep(byteEveryMs);
  }
  await Promise.race([done, Bun.sleep(3000)]);
  socket.end();
  return answer;
}

describe("hostile clients", () => {
  test("a client trickling its body below the floor rate is cut with 408 and reaches no worker", async () => {
    await using cluster = await startCluster({ config: { bodyMinBytesPerSecond: 1000, bodyGraceMs: 300 } });
    const body = JSON.stringify({ model: "m", messages: [{ role: "user", content: "x".repeat(200) }] });
    const started = performance.now();
    const answer = await trickle(cluster.proxy.url, body, 50);
    expect(answer.startsWith("HTTP/1.1 408")).toBe(true);
    expect(performance.now() - started).toBeLessThan(2000);
    expect(cluster.contexts[0]!.requests.filter((r) => r.method === "POST")).toHaveLength(0);
  });

  test("a slow reader of a stream keeps it, past the server's idle timeout", async () => {
    await using cluster = await startCluster({ idleTimeoutS: 1, generations: [{ tokenMs: 5 }] });
    const response = await cluster.post("/v1/chat/completions", {
      model: "m",
      messages: [{ role: "user", content: "x" }],
      max_tokens: 5,
      stream: true,
    });
    const reader = response.body!.getReader();
    await reader.read();
    await Bun.sleep(1600);
    let text = "";
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      text += new TextDecoder().decode(value);
    }
    expect(text).toContain("[DONE]");
  }, 10_000);

  test("headers over 16 KiB are refused by the runtime with 431", async () => {
    await using cluster = await startCluster();
    const response = await fetch(`${cluster.url}/health`, { headers: { "x-padding": "a".repeat(17_000) } });
    expect(response.status).toBe(431);
  });
});
