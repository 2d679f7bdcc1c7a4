import { describe, expect, test } from "bun:test";
import { parseDirectives } from "./directives.ts";

describe("parseDirectives", () => {
  test("finds nothing in a prompt without directives", () => {
    expect(parseDirectives("just a prompt")).toEqual({ context: {}, generation: {}, text: "" });
  });

  test("applies an unprefixed key to every phase", () => {
    const parsed = parseDirectives("hello [[emu tokens=5 token_ms=20]] world");
    expect(parsed.context).toEqual({ tokens: 5, tokenMs: 20 });
    expect(parsed.generation).toEqual({ tokens: 5, tokenMs: 20 });
  });

  test("applies ctx. and gen. keys to their phase only", () => {
    const parsed = parseDirectives("[[emu ctx.prefill_ms=100 gen.cut=3]]");
    expect(parsed.context).toEqual({ prefillMs: 100 });
    expect(parsed.generation).toEqual({ cutAfterTokens: 3 });
  });

  test("lets a prefixed key beat an unprefixed one whatever their order", () => {
    const parsed = parseDirectives("[[emu gen.tokens=2]] and later [[emu tokens=9]]");
    expect(parsed.generation.tokens).toBe(2);
    expect(parsed.context.tokens).toBe(9);
  });

  test("lets the later of two equal keys win", () => {
    expect(parseDirectives("[[emu chunk=7]] [[emu chunk=1]]").generation.chunkBytes).toBe(1);
  });

  test("reads every key of the grammar", () => {
    const text =
      "[[emu prefill_ms=1 token_ms=2 tokens=3 finish=stop reject=503 reject_after_ms=4 cut=5 chunk=6 " +
      "silence_ms=7 silence_after=0 error_event=8 tools=2 reasoning=3 cached=9]]";
    expect(parseDirectives(text).generation).toEqual({
      prefillMs: 1,
      tokenMs: 2,
      tokens: 3,
      finishStop: true,
      rejectStatus: 503,
      rejectAfterMs: 4,
      cutAfterTokens: 5,
      chunkBytes: 6,
      silenceMs: 7,
      silenceAfterTokens: 0,
      errorEventAfterTokens: 8,
      tools: 2,
      reasoning: 3,
      cached: 9,
    });
  });

  test("keeps the directive blocks as text that parses to the same result", () => {
    const parsed = parseDirectives("a [[emu tokens=4]] b [[emu gen.cut=2]] c");
    expect(parsed.text).toBe("[[emu tokens=4]] [[emu gen.cut=2]]");
    const again = parseDirectives(parsed.text);
    expect(again.context).toEqual(parsed.context);
    expect(again.generation).toEqual(parsed.generation);
  });

  test("accepts an empty block", () => {
    expect(parseDirectives("[[emu]]").text).toBe("[[emu]]");
  });

  test("rejects an unknown key by name", () => {
    expect(() => parseDirectives("[[emu tokenz=3]]")).toThrow('unknown key "tokenz"');
  });

  test("rejects a value that is not a non-negative integer", () => {
    expect(() => parseDirectives("[[emu cut=-1]]")).toThrow(SyntaxError);
    expect(() => parseDirectives("[[emu cut=1.5]]")).toThrow("not an integer");
  });

  test("rejects values below a key's minimum", () => {
    expect(() => parseDirectives("[[emu chunk=0]]")).toThrow("at least 1");
    expect(() => parseDirectives("[[emu reject=200]]")).toThrow("at least 400");
    expect(() => parseDirectives("[[emu tokens=0]]")).toThrow("at least 1");
  });

  test("rejects finish with anything but stop, and a pair without a value", () => {
    expect(() => parseDirectives("[[emu finish=length]]")).toThrow('only takes "stop"');
    expect(() => parseDirectives("[[emu tokens]]")).toThrow("expected key=value");
  });
});
