/**
 * A JSON list of integer literals read straight from its bytes (a prompt's token ids): where
 * it ends and how many items it holds, by the WebAssembly scanner (integer-list-simd.ts), or by
 * the JavaScript loop where the runtime cannot run it.
 */

import { integerListLoop, type IntegerListEnd } from "./integer-list-loop.ts";
import { simdIntegerListScanner } from "./integer-list-simd.ts";

export type { IntegerListEnd } from "./integer-list-loop.ts";

/** One per process, like a shared TextEncoder: a call uses its memory from start to return, with no await between. */
const SCANNER = simdIntegerListScanner();

/** The list whose `[` is just before `from`, if it is one of integers only and closes within the bytes; else undefined. */
export function integerListFrom(bytes: Uint8Array, from: number): IntegerListEnd | undefined {
  return SCANNER === undefined ? integerListLoop(bytes, from) : SCANNER.listFrom(bytes, from);
}

/** The number of items of a JSON list of integers in bytes[start, end); -1 when it is anything else. */
export function integerListLength(bytes: Uint8Array, start: number, end: number): number {
  if (end - start < 2 || bytes[start] !== 0x5b || bytes[end - 1] !== 0x5d) return -1;
  const list = integerListFrom(bytes.subarray(0, end), start + 1);
  return list !== undefined && list.end === end ? list.count : -1;
}
