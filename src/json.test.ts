import { describe, expect, test } from "bun:test";
import { isRawJson, parseJson, readInteger } from "./json.ts";

const BIG = "7350918722218165249";
/** Rounds to the same double as BIG. */
const BIG_NEIGHBOUR = "7350918722218165250";

describe("parseJson", () => {
  test("keeps an integer beyond 2^53 exact wherever it sits, and writes it back byte for byte", () => {
    const text = `{"a":${BIG},"b":[1,-${BIG},{"c":${BIG}}],"d":"${BIG}","e":[${"1,".repeat(50)}2]}`;
    const parsed = parseJson(text);
    expect(JSON.stringify(parsed)).toBe(text);
    expect(readInteger((parsed as Record<string, unknown>)["a"])).toBe(BigInt(BIG));
  });

  test("a top-level large integer stays exact", () => {
    const parsed = parseJson(BIG);
    expect(isRawJson(parsed)).toBe(true);
    expect(JSON.stringify(parsed)).toBe(BIG);
  });

  test("two different large integers that round to one double both stay exact", () => {
    const text = `{"x":${BIG},"y":${BIG_NEIGHBOUR}}`;
    expect(JSON.stringify(parseJson(text))).toBe(text);
  });

  test("the same digits inside a string do not confuse a number that rounds alike", () => {
    const text = `{"note":"id ${BIG_NEIGHBOUR}","id":${BIG}}`;
    expect(JSON.stringify(parseJson(text))).toBe(text);
  });

  test("floats and exponents with long digit runs stay numbers", () => {
    const parsed = parseJson(`{"f":12345678901234567.5,"e":1234567890123456789e3,"s":1234567890123456}`) as Record<string, unknown>;
    expect(parsed["f"]).toBe(Number("12345678901234567.5"));
    expect(parsed["e"]).toBe(Number("1234567890123456789e3"));
    expect(parsed["s"]).toBe(1234567890123456);
  });

  test("deeply nested answers parse without exhausting the stack", () => {
    const depth = 20_000;
    const text = `${"[".repeat(depth)}${BIG}${"]".repeat(depth)}`;
    expect(JSON.stringify(parseJson(text))).toBe(text);
  });

  test("invalid JSON throws a SyntaxError", () => {
    expect(() => parseJson(`{"a":${BIG}`)).toThrow(SyntaxError);
  });
});
