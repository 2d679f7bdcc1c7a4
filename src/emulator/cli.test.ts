import { describe, expect, test } from "bun:test";
import { emulatorOptions } from "./cli.ts";

describe("worker flags as the emulator's options", () => {
  test("faults are nested, absent flags absent", () => {
    const options = emulatorOptions("mixed", {
      port: 0,
      host: "127.0.0.1",
      model: "m",
      prefillMs: 5,
      prefillMsPerToken: 0.5,
      tokenMs: 2,
      outputTokens: 8,
      rejectStatus: 503,
      rejectAfterMs: 1,
      cutAfterTokens: 3,
      chunkBytes: 7,
      silenceMs: 100,
      silenceAfterTokens: 2,
      errorEventAfterTokens: 4,
    });
    expect(options).toEqual({
      role: "mixed",
      port: 0,
      host: "127.0.0.1",
      model: "m",
      prefillMs: 5,
      prefillMsPerToken: 0.5,
      tokenMs: 2,
      outputTokens: 8,
      faults: {
        rejectStatus: 503,
        rejectAfterMs: 1,
        cutAfterTokens: 3,
        chunkBytes: 7,
        silenceMs: 100,
        silenceAfterTokens: 2,
        errorEventAfterTokens: 4,
      },
    });
    expect(emulatorOptions("context", { port: 8001 })).toEqual({ role: "context", port: 8001 });
  });

  test("--tokens-per-block, --kv-cache-blocks and --max-records reach the options", () => {
    expect(emulatorOptions("context", { port: 0, tokensPerBlock: 16, kvCacheBlocks: 512, maxRecords: 9 })).toEqual({
      role: "context",
      port: 0,
      tokensPerBlock: 16,
      kvCacheBlocks: 512,
      maxRecords: 9,
    });
    expect(emulatorOptions("context", { port: 0, kvCacheBlocks: 0 })).toEqual({ role: "context", port: 0, kvCacheBlocks: 0 });
  });

  test("--protocol-version names the release the worker plays", () => {
    expect(emulatorOptions("generation", { port: 0, protocolVersion: "1.3.0rc14" })).toEqual({
      role: "generation",
      port: 0,
      protocolVersion: "1.3.0rc14",
    });
  });
});
