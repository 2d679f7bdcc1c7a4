import { describe, expect, test } from "bun:test";
import * as fc from "fast-check";
import { integerListLength } from "./integer-list.ts";
import { integerListLoop } from "./integer-list-loop.ts";
import { simdIntegerListScanner } from "./integer-list-simd.ts";

const simd = simdIntegerListScanner();

const encode = (text: string): Uint8Array => new TextEncoder().encode(text);

/** What JSON's grammar says of the list after `[` at `from`: its end and items, or undefined. */
function oracle(text: string, from: number): { end: number; count: number } | undefined {
  const match = /^[ \t\n\r]*(?:\]|-?(?:0|[1-9]\d*)(?:[ \t\n\r]*,[ \t\n\r]*-?(?:0|[1-9]\d*))*[ \t\n\r]*\])/.exec(text.slice(from));
  if (match === null) return undefined;
  return { end: from + match[0].length, count: match[0].match(/-?\d+/g)?.length ?? 0 };
}

/** Items, now and then one JSON refuses (a leading zero, a lone minus, a fraction, an empty one). */
const item = fc.oneof(
  { weight: 20, arbitrary: fc.integer({ min: 0, max: 9 }).map(String) },
  { weight: 200, arbitrary: fc.integer({ min: -(2 ** 40), max: 2 ** 40 }).map(String) },
  { weight: 1, arbitrary: fc.constantFrom("012", "-01", "00", "-", "1.5", "", "1 2", "--1", "1-") },
);
const separator = fc.constantFrom(",", ",", ", ", ", ", " ,", ",\n", " , ", ",\t ");
/** Plain lists of every length the scanner reads in windows, then cut, spliced or spaced at random. */
const list = fc
  .tuple(fc.array(fc.tuple(separator, item), { maxLength: 3000 }), fc.constantFrom("", " ", "\n"), fc.constantFrom("]", " ]", "]x"))
  .map(([items, before, close]) => `[${before}${items.map(([sep, value], n) => (n === 0 ? value : sep + value)).join("")}${close}`);
const mutation = fc.tuple(fc.nat(), fc.nat(2), fc.constantFrom("", "0", "00", "-", ",", " ", "]", "[", "x", "1.5", "\n", "--1", ",,"));

test("this runtime runs the WebAssembly scanner", () => {
  expect(simd).toBeDefined();
});

const SCANNERS = [
  ["the WebAssembly scanner", (bytes: Uint8Array, from: number) => simd?.listFrom(bytes, from)],
  ["the JavaScript loop", integerListLoop],
] as const;

describe.each(SCANNERS)("a JSON list of integers read from its bytes by %s", (_name, integerListFrom) => {
  test("reads as JSON's grammar does, however long the list and wherever it breaks", () => {
    fc.assert(
      fc.property(list, fc.array(mutation, { maxLength: 3 }), fc.boolean(), (text, mutations, cut) => {
        let mutated = text;
        for (const [at, drop, insert] of mutations) {
          const where = 1 + (at % mutated.length);
          mutated = mutated.slice(0, where) + insert + mutated.slice(where + drop);
        }
        if (cut) mutated = mutated.slice(0, Math.max(1, mutated.length - 2));
        expect(integerListFrom(encode(mutated), 1)).toEqual(oracle(mutated, 1));
      }),
      { numRuns: 3000 },
    );
  });

  test("a leading zero, a lone minus, an empty item or a list left open is refused at any length", () => {
    const long = Array.from({ length: 40_000 }, (_, n) => n * 37).join(",");
    // In the middle of a long plain list, where it is read sixteen bytes at a time, and at its end.
    for (const bad of ["012", "-", "", "1 2", "1-", "-01", "1.5", "00"]) {
      expect(integerListFrom(encode(`[${long},${bad},${long}]`), 1)).toBeUndefined();
      expect(integerListFrom(encode(`[${long},${bad}]`), 1)).toBeUndefined();
    }
    for (const open of [`[${long}`, `[${long},`, `[${long},]`]) expect(integerListFrom(encode(open), 1)).toBeUndefined();
    expect(integerListFrom(encode(`[${long}, -0, 0, 10]`), 1)).toEqual({ end: long.length + 13, count: 40_003 });
  });

  test("an empty list has no items", () => {
    expect(integerListFrom(encode("[ ]"), 1)).toEqual({ end: 3, count: 0 });
    expect(integerListFrom(encode("[]"), 1)).toEqual({ end: 2, count: 0 });
  });
});

describe("the items of a list that fills its range", () => {
  test("are counted, and a range the list does not fill, or not a list of integers, reads -1", () => {
    expect(integerListLength(encode(`{"a":[1, 2,3]}`), 5, 13)).toBe(3);
    expect(integerListLength(encode(`{"a":[1, 2,3]}`), 5, 12)).toBe(-1);
    expect(integerListLength(encode(`{"a":["1"]}`), 5, 10)).toBe(-1);
  });
});
