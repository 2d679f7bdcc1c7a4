import { describe, expect, test } from "bun:test";
import { integerListLength, keptListEquals, keptListValues, parseKeepingList } from "./json-bytes.ts";
import type { JsonObject } from "./json.ts";

const encoder = new TextEncoder();
const count = (text: string): number => integerListLength(encoder.encode(text), 0, encoder.encode(text).length);

describe("integer lists read from bytes", () => {
  test("a long list of integers in an answer is kept as its bytes and counted; anything else is parsed as usual", () => {
    const ids = Array.from({ length: 3000 }, (_, i) => (i % 7 === 0 ? -i - 1 : i * 13));
    const text = `{"id":"x", "prompt_token_ids" : ${JSON.stringify(ids).replaceAll(",", ", ")} ,"usage":{"n":1}}`;
    const kept = parseKeepingList(encoder.encode(text), "prompt_token_ids", 100);
    expect(kept.body).toEqual({ id: "x", prompt_token_ids: null, usage: { n: 1 } });
    expect(kept.kept?.count).toBe(3000);
    expect(kept.kept && keptListValues(kept.kept)).toEqual(ids);
    expect(kept.kept && keptListEquals(kept.kept, ids)).toBe(true);
    expect(kept.kept && keptListEquals(kept.kept, [...ids.slice(0, -1), 1])).toBe(false);
    expect(kept.kept && keptListEquals(kept.kept, ids.slice(1))).toBe(false);
    for (const other of ["[1.5, 2]", '["a"]', "{}"]) {
      const parsed = parseKeepingList(encoder.encode(`{"prompt_token_ids":${other}${" ".repeat(200)}}`), "prompt_token_ids", 10);
      expect(parsed.kept).toBeUndefined();
      expect(parsed.body).toEqual({ prompt_token_ids: JSON.parse(other) as JsonObject });
    }
    for (const broken of ["[1,,2]", "[01]", "[1 2]", "[-]"]) {
      expect(() => parseKeepingList(encoder.encode(`{"prompt_token_ids":${broken}${" ".repeat(200)}}`), "prompt_token_ids", 10)).toThrow(SyntaxError);
    }
    expect(parseKeepingList(encoder.encode(`{"prompt_token_ids":[1,2]}`), "prompt_token_ids", 100).body).toEqual({ prompt_token_ids: [1, 2] });
    expect(() => parseKeepingList(encoder.encode(`{"prompt_token_ids":[1,2],}`), "prompt_token_ids", 5)).toThrow(SyntaxError);
  });

  test("an answer that repeats the kept key is read as JSON.parse reads it: the last member wins, and it is the one kept", () => {
    const long = Array.from({ length: 3000 }, (_, i) => i + 1000);
    const other = Array.from({ length: 2500 }, (_, i) => i * 3);
    for (const last of ["[1,2,3]", '"hello"', JSON.stringify(other), "{}"]) {
      const text = `{"prompt_token_ids":${JSON.stringify(long)},"id":"x","prompt\\u005ftoken_ids":[9],"prompt_token_ids":${last}}`;
      const parsed = parseKeepingList(encoder.encode(text), "prompt_token_ids", 100);
      const lastValue = (JSON.parse(text) as JsonObject)["prompt_token_ids"];
      if (parsed.kept === undefined) expect(parsed.body).toEqual(JSON.parse(text) as JsonObject);
      else {
        expect(parsed.body).toEqual({ ...(JSON.parse(text) as JsonObject), prompt_token_ids: null });
        expect(keptListValues(parsed.kept)).toEqual(lastValue as number[]);
      }
      expect(parsed.kept === undefined).toBe(last !== JSON.stringify(other));
    }
  });

  test("integerListLength counts a JSON list of integers and refuses anything else", () => {
    expect(count("[]")).toBe(0);
    expect(count("[ 0 , -12,3\n]")).toBe(3);
    for (const bad of ["[1,]", "[,1]", "[1.0]", "[1e3]", "[--1]", "[1-]", "[00]", "[-01]", "1", "[1", "[true]"]) expect(count(bad)).toBe(-1);
  });
});
