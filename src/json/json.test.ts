import { describe, expect, test } from "bun:test";
import { isRawJson, parseClientJson, parseJson, parseJsonOrUndefined, readInteger } from "./json.ts";

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

describe("parseJsonOrUndefined", () => {
  test("text that is not JSON is undefined; JSON is parseJson's value, null and large integers included", () => {
    expect(parseJsonOrUndefined("{not json")).toBeUndefined();
    expect(parseJsonOrUndefined("")).toBeUndefined();
    expect(parseJsonOrUndefined("null")).toBeNull();
    expect(JSON.stringify(parseJsonOrUndefined(`{"a":${BIG}}`))).toBe(`{"a":${BIG}}`);
  });
});

describe("parseClientJson", () => {
  test("a number that is not an integer literal is never read as a digit run written elsewhere", () => {
    // Each rounds to 2^64, as does the in-range 2^64 - 1 written in a string beside it.
    for (const written of ["18446744073709551616.0", "1.8446744073709552e19", "1844674407.3709551616e10"]) {
      const parsed = parseClientJson(`{"user":"18446744073709551615","seed":${written}}`) as Record<string, unknown>;
      expect([written, isRawJson(parsed["seed"])]).toEqual([written, false]);
      expect(parsed["seed"]).toBe(2 ** 64);
    }
  });

  test("integer literals beyond 2^53 stay exact, and bodies without a long digit run parse plainly", () => {
    const text = `{"a":${BIG},"b":[-${BIG_NEIGHBOUR}],"d":"${BIG}"}`;
    expect(JSON.stringify(parseClientJson(text))).toBe(text);
    expect(parseClientJson('{"a":1.5,"b":[1,2]}')).toEqual({ a: 1.5, b: [1, 2] });
  });
});
