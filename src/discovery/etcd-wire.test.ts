import { describe, expect, test } from "bun:test";
import { decode, encode, errorOf, linesOf, prefixRangeEnd } from "./etcd-wire.ts";

const bytes = (text: string): Uint8Array => new TextEncoder().encode(text);

describe("etcd gateway encoding", () => {
  test("keys round-trip through base64, including non-ASCII", () => {
    expect(decode(encode("/trtllm-disagg/ä/workers/x"))).toBe("/trtllm-disagg/ä/workers/x");
    expect(decode(undefined)).toBe("");
  });

  test("a prefix's range end increments its last byte", () => {
    expect(decode(prefixRangeEnd("/trtllm-disagg/c/workers/"))).toBe("/trtllm-disagg/c/workers0");
    expect(decode(prefixRangeEnd("trtllm/"))).toBe("trtllm0");
    expect(Buffer.from(prefixRangeEnd("a\u00ff"), "base64")).toEqual(Buffer.from([0x61, 0xc3, 0xc0]));
  });

  test("watch lines are whole however the bytes are split, multi-byte characters included", async () => {
    const text = '{"a":"é"}\n{"b":2}\n\n{"c":3}';
    for (let cut = 0; cut <= text.length; cut += 1) {
      const all = bytes(text);
      const split = Math.min(all.length, cut);
      const chunks = async function* (): AsyncGenerator<Uint8Array> {
        yield all.subarray(0, split);
        yield all.subarray(split);
      };
      const lines = await Array.fromAsync(linesOf(chunks()));
      expect(lines).toEqual(['{"a":"é"}', '{"b":2}', '{"c":3}']);
    }
  });

  test("gateway errors are read from unary and stream bodies", () => {
    expect(errorOf({ error: "etcdserver: requested lease not found", code: 5, message: "etcdserver: requested lease not found" })).toEqual({
      message: "etcdserver: requested lease not found",
      code: 5,
    });
    expect(errorOf({ error: { grpc_code: 14, message: "unavailable" } })).toEqual({ message: "unavailable", code: 14 });
    expect(errorOf({ result: {} })).toBeUndefined();
  });
});
