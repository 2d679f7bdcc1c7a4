import { describe, expect, test } from "bun:test";
import { array, assert, boolean, constantFrom, nat, property } from "fast-check";
import {
  ANSWER_SHAPE_LIMITS,
  integerListLength,
  keptListEquals,
  keptListNumbers,
  keptListValues,
  parseKeepingList,
  type KeptList,
} from "./json-bytes.ts";
import { JsonShapeGuard } from "./json-shape.ts";
import type { JsonObject } from "./json.ts";

const encoder = new TextEncoder();

/** parseKeepingList as the worker client calls it: on the layout of a guard fed the whole answer. */
function keep(bytes: Uint8Array, key: string, keepBytes: number): ReturnType<typeof parseKeepingList> {
  const guard = new JsonShapeGuard(ANSWER_SHAPE_LIMITS, bytes.length);
  expect(guard.feed(bytes)).toBeUndefined();
  return parseKeepingList(bytes, guard.layout(), key, keepBytes);
}
const count = (text: string): number => integerListLength(encoder.encode(text), 0, encoder.encode(text).length);

/** True when a worker answer's shape is within ANSWER_SHAPE_LIMITS. */
function within(text: string): boolean {
  const bytes = encoder.encode(text);
  const guard = new JsonShapeGuard(ANSWER_SHAPE_LIMITS, 64 << 20);
  return guard.feed(bytes) === undefined && guard.finish(bytes.length) === undefined;
}

describe("integer lists read from bytes", () => {
  test("a long list of integers in an answer is kept as its bytes and counted; anything else is parsed as usual", () => {
    const ids = Array.from({ length: 3000 }, (_, i) => (i % 7 === 0 ? -i - 1 : i * 13));
    const text = `{"id":"x", "prompt_token_ids" : ${JSON.stringify(ids).replaceAll(",", ", ")} ,"usage":{"n":1}}`;
    const kept = keep(encoder.encode(text), "prompt_token_ids", 100);
    expect(kept.body).toEqual({ id: "x", prompt_token_ids: null, usage: { n: 1 } });
    expect(kept.kept?.count).toBe(3000);
    expect(kept.kept && keptListValues(kept.kept)).toEqual(ids);
    expect(kept.kept && keptListEquals(kept.kept, ids)).toBe(true);
    expect(kept.kept && keptListEquals(kept.kept, [...ids.slice(0, -1), 1])).toBe(false);
    expect(kept.kept && keptListEquals(kept.kept, ids.slice(1))).toBe(false);
    for (const other of ["[1.5, 2]", '["a"]', "{}"]) {
      const parsed = keep(encoder.encode(`{"prompt_token_ids":${other}${" ".repeat(200)}}`), "prompt_token_ids", 10);
      expect(parsed.kept).toBeUndefined();
      expect(parsed.body).toEqual({ prompt_token_ids: JSON.parse(other) as JsonObject });
    }
    for (const broken of ["[1,,2]", "[01]", "[1 2]", "[-]"]) {
      expect(() => keep(encoder.encode(`{"prompt_token_ids":${broken}${" ".repeat(200)}}`), "prompt_token_ids", 10)).toThrow(SyntaxError);
    }
    expect(keep(encoder.encode(`{"prompt_token_ids":[1,2]}`), "prompt_token_ids", 100).body).toEqual({ prompt_token_ids: [1, 2] });
    expect(() => keep(encoder.encode(`{"prompt_token_ids":[1,2],}`), "prompt_token_ids", 5)).toThrow(SyntaxError);
  });

  test("an answer that repeats the kept key is read as JSON.parse reads it: the last member wins, and it is the one kept", () => {
    const long = Array.from({ length: 3000 }, (_, i) => i + 1000);
    const other = Array.from({ length: 2500 }, (_, i) => i * 3);
    for (const last of ["[1,2,3]", '"hello"', JSON.stringify(other), "{}"]) {
      const text = `{"prompt_token_ids":${JSON.stringify(long)},"id":"x","prompt\\u005ftoken_ids":[9],"prompt_token_ids":${last}}`;
      const parsed = keep(encoder.encode(text), "prompt_token_ids", 100);
      const lastValue = (JSON.parse(text) as JsonObject)["prompt_token_ids"];
      if (parsed.kept === undefined) expect(parsed.body).toEqual(JSON.parse(text) as JsonObject);
      else {
        expect(parsed.body).toEqual({ ...(JSON.parse(text) as JsonObject), prompt_token_ids: null });
        expect(keptListValues(parsed.kept)).toEqual(lastValue as number[]);
      }
      expect(parsed.kept === undefined).toBe(last !== JSON.stringify(other));
    }
  });

  test("answers as long as upstream legitimately sends are within the answer shape bounds; bombs of nesting or empty values are not", () => {
    // A 128k-token prompt's ids at their shortest (one digit each), in a context answer.
    const ids = Array.from({ length: 131_072 }, (_, i) => i % 10);
    expect(
      within(JSON.stringify({ id: "x", choices: [{ index: 0, disaggregated_params: { first_gen_tokens: [1] } }], prompt_token_ids: ids })),
    ).toBe(true);
    // Chat logprobs at their tersest (openai_protocol.py ChatCompletionLogProb: token, logprob, bytes), top_logprobs=20, 8k tokens.
    const entry = { token: "a", logprob: 0, bytes: [97] };
    const content = Array.from({ length: 8192 }, () => ({ ...entry, top_logprobs: Array.from({ length: 20 }, () => entry) }));
    expect(within(JSON.stringify({ choices: [{ index: 0, message: { content: "a".repeat(8192) }, logprobs: { content } }] }))).toBe(true);
    // Completions logprobs (CompletionLogProbs: tokens, token_logprobs, top_logprobs dicts, text_offset).
    const tokens = Array.from({ length: 8192 }, (_, i) => String.fromCharCode(97 + (i % 26)));
    const top = tokens.map(() => Object.fromEntries(tokens.slice(0, 20).map((t) => [t, 0])));
    expect(
      within(
        JSON.stringify({
          choices: [{ logprobs: { tokens, token_logprobs: tokens.map(() => 0), top_logprobs: top, text_offset: tokens.map((_, i) => i) } }],
        }),
      ),
    ).toBe(true);
    expect(within(`{"x":${"[".repeat(257)}${"]".repeat(257)}}`)).toBe(false);
    expect(within(`{"x":${"[".repeat(255)}${"]".repeat(255)}}`)).toBe(true);
    expect(within(`[${"[],".repeat(100_000)}[]]`)).toBe(false);
    expect(within(`[${'"",'.repeat(100_000)}""]`)).toBe(false);
  });

  test("integerListLength counts a JSON list of integers and refuses anything else", () => {
    expect(count("[]")).toBe(0);
    expect(count("[ 0 , -12,3\n]")).toBe(3);
    for (const bad of ["[1,]", "[,1]", "[1.0]", "[1e3]", "[--1]", "[1-]", "[00]", "[-01]", "1", "[1", "[true]", "[-]", "[1 2]", "[1,-]"])
      expect(count(bad)).toBe(-1);
  });

  test("integerListLength agrees with JSON's grammar of a list of integer literals on any mix of its bytes", () => {
    const literal = /^\[[ \t\n\r]*(?:-?(?:0|[1-9][0-9]*)(?:[ \t\n\r]*,[ \t\n\r]*-?(?:0|[1-9][0-9]*))*)?[ \t\n\r]*\]$/;
    const expected = (text: string): number => (literal.test(text) ? (JSON.parse(text) as unknown[]).length : -1);
    const piece = constantFrom("0", "1", "7", "00", "12", "-", ",", " ", "\n", "[", "]", ".", "e", "x");
    assert(
      property(array(piece, { maxLength: 14 }), boolean(), (pieces, closed) => {
        const text = `[${pieces.join("")}${closed ? "]" : ""}`;
        expect(count(text)).toBe(expected(text));
      }),
      { numRuns: 3000 },
    );
  });
});

describe("the shape guard's integer lists", () => {
  test("are the top-level lists integerListLength reads, with its count, whatever the split", () => {
    const piece = constantFrom("0", "1", "7", "00", "12", "-", ",", " ", "[", "]", ".", '"', "x");
    assert(
      property(array(piece, { maxLength: 12 }), array(nat(60), { maxLength: 3 }), (pieces, cuts) => {
        const text = `{"a":[${pieces.join("")}],"b":[1,2]}`;
        const bytes = encoder.encode(text);
        const guard = new JsonShapeGuard(ANSWER_SHAPE_LIMITS, bytes.length);
        let at = 0;
        for (const cut of [...cuts.toSorted((x, y) => x - y), bytes.length]) {
          guard.feed(bytes.subarray(at, Math.max(at, Math.min(cut, bytes.length))));
          at = Math.max(at, Math.min(cut, bytes.length));
        }
        const lists = guard.layout().integerLists;
        for (let n = 0; n < lists.length; n += 3) expect(integerListLength(bytes, lists[n]!, lists[n + 1]!)).toBe(lists[n + 2]!);
        // Read whole, a list integerListLength accepts is recorded.
        const end = 5 + pieces.join("").length + 2;
        const expected = integerListLength(bytes, 5, end);
        if (cuts.length === 0 && expected >= 0) expect(lists.slice(0, 3)).toEqual([5, end, expected]);
      }),
      { numRuns: 2000 },
    );
  });
});

const kept = (text: string): KeptList => ({ bytes: encoder.encode(text), count: (JSON.parse(text) as unknown[]).length });

describe("keptListNumbers", () => {
  test("reads the kept ids as numbers, as the parse does, leaving out those beyond 2^53", () => {
    expect(keptListNumbers(kept("[0, 12,-3 ,9007199254740991]"))).toEqual([0, 12, -3, 9007199254740991]);
    expect(keptListNumbers(kept("[1,18446744073709551615,2]"))).toEqual([1, 2]);
    expect(keptListNumbers(kept("[]"))).toEqual([]);
  });
});
