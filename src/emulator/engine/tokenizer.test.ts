import { expect, test } from "bun:test";
import { tokenize } from "./tokenizer.ts";

test("by default a prompt is one token per whitespace-separated word", () => {
  expect(tokenize("  one two\nthree ")).toHaveLength(3);
});

test("with bytes per token, a prompt of n bytes is floor(n / size) tokens, the same bytes the same ids", () => {
  const text = "abcdabcdé-xy";
  const ids = tokenize(text, 4);
  expect(ids).toHaveLength(Math.floor(new TextEncoder().encode(text).length / 4));
  expect(ids[0]).toBe(ids[1]);
  expect(ids[2]).not.toBe(ids[0]);
  expect(tokenize("abc", 4)).toEqual([]);
});
