import { describe, expect, test } from "bun:test";
import { startCluster } from "./support/cluster.ts";

function joined(parts: readonly Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, p) => n + p.byteLength, 0));
  let offset = 0;
  for (const part of parts) {
    out.set(part, offset);
    offset += part.byteLength;
  }
  return out;
}

describe.each(["context_first", "generation_first"] as const)("%s: byte-exact relay", (schedule) => {
  test.each([1, 7, 4096])("a generation stream delivered in %p-byte pieces reaches the client byte for byte", async (size) => {
    await using cluster = await startCluster({ generations: [{ recordReplies: true, tokenMs: 1 }], config: { schedule } });
    for (const path of ["/v1/chat/completions", "/v1/completions"]) {
      const prompt = `pieces [[emu gen.chunk=${size} tokens=40]] ${"é漢🙂 ".repeat(5)}`;
      const body =
        path === "/v1/completions"
          ? { model: "m", prompt, max_tokens: 40, stream: true, stream_options: { include_usage: true } }
          : { model: "m", messages: [{ role: "user", content: prompt }], max_tokens: 40, stream: true };
      const response = await cluster.post(path, body);
      const received = new Uint8Array(await response.arrayBuffer());
      const gen = cluster.generations[0]!.requests.findLast((r) => r.phase === "generation")!;
      const sent = joined(gen.sent);
      expect(sent.byteLength).toBeGreaterThan(1000);
      expect(Buffer.from(received).equals(Buffer.from(sent))).toBe(true);
      if (size === 1) expect(gen.sent.length).toBe(sent.byteLength);
    }
  });
});
