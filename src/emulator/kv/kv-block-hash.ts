/**
 * The emulated engine's KV block names: TensorRT-LLM's `v1_block_key` hash over blocks of
 * tokensPerBlock prompt token ids, chained (a block's seed holds its length and its parent's
 * hash, so one hash names the block and its whole prefix). As in the engine, the prompt's last
 * token belongs to no block key; only full blocks are cached.
 *
 * The proxy's routers compute the same hashes (src/routing/block-hash.ts); the emulator keeps its
 * own copy because it imports nothing from the proxy. A routing test checks they agree.
 */

const MASK64 = (1n << 64n) - 1n;
const PARENT_CONST = 0xbf58476d1ce4e5b9n;
const MIX_CONST = 0x45d9f3b;
const COMBINE_CONST = 0x9e3779b9;
const TWO32 = 2 ** 32;

/** The hashes of the full blocks of ids[0, length − 1). */
export function fullBlockHashes(ids: readonly number[], tokensPerBlock: number): bigint[] {
  const end = ids.length - 1;
  const hashes: bigint[] = [];
  let parent = 0n;
  for (let from = 0; from + tokensPerBlock <= end; from += tokensPerBlock) {
    parent = blockKey(ids, from, from + tokensPerBlock, parent);
    hashes.push(parent);
  }
  return hashes;
}

function blockKey(ids: readonly number[], from: number, to: number, parent: bigint): bigint {
  const seed = BigInt(to - from) ^ ((parent * PARENT_CONST) & MASK64);
  let hi = Number(seed >> 32n);
  let lo = Number(seed & 0xffffffffn);
  for (let i = from; i < to; i++) {
    // seed ^= (hash32(id) + 0x9e3779b9) + (seed << 6) + (seed >> 2), modulo 2^64, on 32-bit halves.
    let value = (ids[i] ?? 0) >>> 0;
    value = Math.imul((value >>> 16) ^ value, MIX_CONST) >>> 0;
    value = Math.imul((value >>> 16) ^ value, MIX_CONST) >>> 0;
    value = (((value >>> 16) ^ value) + COMBINE_CONST) >>> 0;
    const lowSum = value + ((lo << 6) >>> 0) + (((lo >>> 2) | (hi << 30)) >>> 0);
    const carry = lowSum >= TWO32 ? (lowSum >= 2 * TWO32 ? 2 : 1) : 0;
    hi = (hi ^ ((((hi << 6) | (lo >>> 26)) + (hi >>> 2) + carry) >>> 0)) >>> 0;
    lo = (lo ^ lowSum) >>> 0;
  }
  return (BigInt(hi) << 32n) | BigInt(lo);
}
