import { describe, expect, test } from "bun:test";
import { parseJson } from "../json/json.ts";
import { compareCodePoints, pythonCanonicalJson, pythonFloat } from "./python-json.ts";

/** Vectors written by CPython (test/fixtures/hmac/make-vectors.py); see that file to regenerate. */
interface Vectors {
  readonly canonical: readonly { name: string; input: string; expected: string }[];
  readonly rawNumbers: readonly { input: string; expected: string }[];
  readonly floatReprs: readonly string[];
}

const vectors = (await Bun.file(new URL("../../test/fixtures/hmac/vectors.json", import.meta.url)).json()) as Vectors;

describe("pythonCanonicalJson", () => {
  test.each(vectors.canonical.map((v) => [v.name, v] as const))("%s: byte-equal to CPython", (_name, vector) => {
    expect(pythonCanonicalJson(parseJson(vector.input))).toBe(vector.expected);
  });

  test("the float vector's input is exactly what JSON.stringify writes, so it is what a worker reads", () => {
    const floats = vectors.canonical.find((v) => v.name.startsWith("floats"));
    expect(floats).toBeDefined();
    expect(JSON.stringify(JSON.parse(floats!.input))).toBe(floats!.input);
  });

  test.each(vectors.rawNumbers.map((v) => [v.input, v.expected] as const))(
    "raw number text %s is written as Python reads it: %s",
    (input, expected) => {
      expect(pythonCanonicalJson(JSON.rawJSON(input))).toBe(expected);
    },
  );

  test("raw string, boolean and null texts are written as their values", () => {
    expect(pythonCanonicalJson([JSON.rawJSON('"é"'), JSON.rawJSON("true"), JSON.rawJSON("null")])).toBe('["\\u00e9",true,null]');
  });

  test("undefined members are left out, as JSON.stringify leaves them off the wire", () => {
    expect(pythonCanonicalJson({ b: undefined, a: 1 })).toBe('{"a":1}');
  });

  test("every double of the 332 CPython repr texts is written back as the same text", () => {
    expect(vectors.floatReprs).toHaveLength(332);
    const mismatches = vectors.floatReprs.filter((text) => pythonFloat(Number(text)) !== text);
    expect(mismatches).toEqual([]);
  });

  test("non-finite numbers are written as Python writes them", () => {
    expect([Number.NaN, Infinity, -Infinity].map(pythonFloat)).toEqual(["NaN", "Infinity", "-Infinity"]);
  });

  test("keys compare by code point, so an astral character sorts after U+FFFF", () => {
    expect(["\u{1F600}", "\uFFFF", "a", ""].toSorted(compareCodePoints)).toEqual(["", "a", "\uFFFF", "\u{1F600}"]);
    expect(compareCodePoints("ab", "a")).toBeGreaterThan(0);
    expect(compareCodePoints("x", "x")).toBe(0);
  });
});
