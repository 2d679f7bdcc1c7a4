/**
 * The emulator's tokenizer: one token per whitespace-separated word, and a token's id is
 * 1000 + (32-bit FNV-1a hash of the word mod 30000). Ids are small, stable across workers and
 * runs, and the same word always maps to the same id, which is all the wire protocol needs.
 */

const FNV_OFFSET = 0x811c9dc5;
const FNV_PRIME = 0x01000193;
const FIRST_ID = 1000;
const ID_RANGE = 30000;

export function tokenId(word: string): number {
  let hash = FNV_OFFSET;
  for (let i = 0; i < word.length; i++) {
    hash ^= word.charCodeAt(i);
    hash = Math.imul(hash, FNV_PRIME) >>> 0;
  }
  return FIRST_ID + (hash % ID_RANGE);
}

export function tokenize(text: string): number[] {
  return text
    .split(/\s+/)
    .filter((word) => word !== "")
    .map(tokenId);
}
