import { describe, expect, test } from "bun:test";
import { parseCommandLine } from "../cli.ts";
import { UsageError } from "./errors.ts";

function worker(...flags: string[]): unknown {
  return parseCommandLine(["worker", "--role", "context", "--port", "0", ...flags]);
}

describe("worker KV cache flags", () => {
  test("--tokens-per-block and --kv-cache-blocks reach the emulator's options", () => {
    expect(worker("--tokens-per-block", "16", "--kv-cache-blocks", "512")).toEqual({
      kind: "worker",
      options: { role: "context", port: 0, tokensPerBlock: 16, kvCacheBlocks: 512 },
    });
    expect(worker("--kv-cache-blocks", "0")).toEqual({ kind: "worker", options: { role: "context", port: 0, kvCacheBlocks: 0 } });
  });

  test("a block holds at least one token; a negative capacity is refused", () => {
    expect(() => worker("--tokens-per-block", "0")).toThrow(UsageError);
    expect(() => worker("--kv-cache-blocks", "-1")).toThrow(UsageError);
  });
});
