import { describe, expect, test } from "bun:test";
import { array, assert, integer, nat, property } from "fast-check";
import { parseJson } from "../json/json.ts";
import { blockHashes, matchedDepth, readBlockHash, textBlockHashes } from "./block-hash.ts";

/** Computed with TensorRT-LLM's tensorrt_llm/runtime/kv_cache_hash.py (hash_v1_block_key), blocks as its router cuts them. */
const REFERENCE: readonly (readonly [readonly number[], number, readonly string[]])[] = [
  [[1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 4, ["924206229973855", "2728178455351807326", "5840390857880430736"]],
  [
    Array.from({ length: 100 }, (_, i) => 1000 + i),
    32,
    ["10007796145622571252", "12240282022063672032", "13951450858377288959", "1934432471346600697"],
  ],
  [[4294967295, 0, 123456789, 7], 2, ["209844182609", "12516000985120204551"]],
];

describe("blockHashes", () => {
  test.each(REFERENCE)("matches TensorRT-LLM's v1_block_key hashes for %p in blocks of %p", (input, size, expected) => {
    expect(blockHashes(input, size).map(String)).toEqual([...expected]);
  });

  test("leaves the last element out of every block and keeps a partial final block", () => {
    expect(blockHashes([1, 2, 3, 4, 5], 2)).toHaveLength(2);
    expect(blockHashes([1, 2, 3, 4, 5, 6], 2)).toHaveLength(3);
    expect(blockHashes([1], 2)).toEqual([]);
  });

  test("a block's hash names its whole prefix: the same block after a different prefix hashes differently", () => {
    const [, second] = blockHashes([1, 2, 3, 4, 0], 2);
    const [, other] = blockHashes([9, 2, 3, 4, 0], 2);
    expect(second).not.toBe(other);
  });

  test("a longer prompt starts with the hashes of the shorter prompt's full blocks", () => {
    const short = blockHashes([1, 2, 3, 4, 5, 6, 7, 8, 9, 10], 4);
    const long = blockHashes([1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16], 4);
    expect(long.slice(0, 2)).toEqual(short.slice(0, 2));
    expect(long[2]).not.toBe(short[2]);
  });

  test("skipping leading elements hashes the rest as a prompt of its own", () => {
    expect(blockHashes([9, 9, 9, 9, 1, 2, 3, 4, 5, 6, 7, 8], 4, 4)).toEqual(blockHashes([1, 2, 3, 4, 5, 6, 7, 8], 4));
  });
});

/** v1_block_key in BigInt arithmetic, from its definition: the oracle for the int32 mix. */
function oracleKey(ids: readonly number[], from: number, to: number, parent: bigint): bigint {
  const mask = 2n ** 64n - 1n;
  let seed = BigInt(to - from) ^ ((parent * 0xbf58476d1ce4e5b9n) & mask);
  for (let i = from; i < to; i++) {
    let x = BigInt((ids[i] ?? 0) >>> 0);
    x = (((x >> 16n) ^ x) * 0x45d9f3bn) & 0xffffffffn;
    x = (((x >> 16n) ^ x) * 0x45d9f3bn) & 0xffffffffn;
    const hash = (((x >> 16n) ^ x) + 0x9e3779b9n) & 0xffffffffn;
    seed = (seed ^ ((hash + (seed << 6n) + (seed >> 2n)) & mask)) & mask;
  }
  return seed;
}

test("blockHashes equals v1_block_key computed in BigInt arithmetic, on any ids and block size", () => {
  assert(
    property(array(nat(2 ** 32 - 1), { maxLength: 80 }), integer({ min: 1, max: 9 }), (ids, size) => {
      const expected: bigint[] = [];
      for (let from = 0, parent = 0n; from < ids.length - 1; from += size) {
        parent = oracleKey(ids, from, Math.min(from + size, ids.length - 1), parent);
        expected.push(parent);
      }
      expect(blockHashes(ids, size)).toEqual(expected);
    }),
  );
});

describe("textBlockHashes", () => {
  test("cuts text as blockHashes cuts ids: the last code unit left out, a partial final window kept", () => {
    expect(textBlockHashes("abcde", 2)).toHaveLength(2);
    expect(textBlockHashes("abcdef", 2)).toHaveLength(3);
    expect(textBlockHashes("a", 2)).toEqual([]);
  });

  test("a window's hash names its whole prefix, and a longer prompt starts with the shorter one's full windows", () => {
    const short = textBlockHashes("abcdefghij", 4);
    const long = textBlockHashes("abcdefghijklmnop", 4);
    expect(long.slice(0, 2)).toEqual(short.slice(0, 2));
    expect(long[2]).not.toBe(short[2]);
    expect(textBlockHashes("xbcdefgh", 4)[1]).not.toBe(textBlockHashes("abcdefgh", 4)[1]);
  });

  test("skipping leading code units hashes the rest as a prompt of its own; equal text hashes alike however it was built", () => {
    expect(textBlockHashes("xxxxabcdefgh", 4, 4)).toEqual(textBlockHashes("abcdefgh", 4));
    expect(textBlockHashes(("中" + "é".repeat(9)).slice(1), 4)).toEqual(textBlockHashes("é".repeat(9), 4));
  });
});

describe("matchedDepth and readBlockHash", () => {
  test("the matched depth stops at the first block the worker lacks", () => {
    const cached = new Set([1n, 2n, 4n]);
    expect(matchedDepth([1n, 2n, 3n, 4n], (hash) => cached.has(hash))).toBe(2);
    expect(matchedDepth([], () => true)).toBe(0);
  });

  test("block hashes above 2^53 are read exactly from losslessly parsed JSON", () => {
    const parsed = parseJson('[12516000985120204551, 209844182609, -1, "7", 1.5]');
    expect(Array.isArray(parsed) ? parsed.map(readBlockHash) : []).toEqual([
      12516000985120204551n,
      209844182609n,
      2n ** 64n - 1n,
      undefined,
      undefined,
    ]);
  });
});
