/**
 * The emulator's tokenizer: one token per whitespace-separated word, and a token's id is
 * 1000 + (32-bit FNV-1a hash of the word mod 30000). Ids are small, stable across workers and
 * runs, and the same word always maps to the same id, which is all the wire protocol needs.
 * With `bytesPerToken` (the worker's --bytes-per-token), one token per that many bytes of the
 * text instead, as dense as a real BPE tokenizer on prose (~4 bytes a token): what sizes a
 * context answer's prompt_token_ids for an agent's long prompt.
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

export function tokenize(text: string, bytesPerToken?: number): number[] {
  if (bytesPerToken !== undefined) return byteTokens(new TextEncoder().encode(text), bytesPerToken);
  return text
    .split(/\s+/)
    .filter((word) => word !== "")
    .map(tokenId);
}

/** floor(bytes / size) tokens, each the FNV-1a hash of its `size` bytes. */
function byteTokens(bytes: Uint8Array, size: number): number[] {
  const ids: number[] = Array.from({ length: Math.floor(bytes.length / size) }, () => 0);
  for (let n = 0; n < ids.length; n++) {
    let hash = FNV_OFFSET;
    for (let i = n * size; i < (n + 1) * size; i++) {
      hash ^= bytes[i]!;
      hash = Math.imul(hash, FNV_PRIME) >>> 0;
    }
    ids[n] = FIRST_ID + (hash % ID_RANGE);
  }
  return ids;
}
