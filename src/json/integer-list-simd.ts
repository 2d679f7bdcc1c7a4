/**
 * The JSON list-of-integers check compiled to WebAssembly (integer-list.wat): sixteen bytes at a
 * time where the list is plain. A context answer's token ids are most of an agent request's
 * answer bytes, and the JavaScript loop over them (integer-list-loop.ts) was a tenth of a 100 KB
 * request's CPU; here, the copy into its memory included, 185 KB of ids take 53 µs, not 291.
 */

import type { IntegerListEnd } from "./integer-list-loop.ts";
import { INTEGER_LIST_WASM } from "./integer-list-wasm.ts";

interface ScannerExports {
  readonly memory: WebAssembly.Memory;
  reset(): void;
  count(): number;
  /** The window [from, to): just after the `]` in it, -1 for no list of integers, -2 for more to come. */
  scan(from: number, to: number): number;
}

/** Where integer-list.wat expects its tables and its window. */
const CLASSES_AT = 0;
const TRANSITIONS_AT = 256;
const WINDOW_AT = 512;
/** A list is copied into the scanner's memory in windows growing from the first to the largest. */
const FIRST_WINDOW = 256;
const MAX_WINDOW = 64 * 1024;

/** Byte classes as integer-list.wat reads them (0: any other byte). */
const SPACE = 1;
const MINUS = 2;
const ZERO = 3;
const DIGIT = 4;
const COMMA = 5;
const CLOSE = 6;
const FAILED = 7;
/** [state][class] → state; states: start, value, minus, zero, digits, after a number's spaces (done 6, failed 7). */
const TRANSITIONS: readonly (readonly number[])[] = [
  // other   space  minus  zero  digit  comma   close
  [FAILED, 0, 2, 3, 4, FAILED, 6],
  [FAILED, 1, 2, 3, 4, FAILED, FAILED],
  [FAILED, FAILED, FAILED, 3, 4, FAILED, FAILED],
  [FAILED, 5, FAILED, FAILED, FAILED, 1, 6],
  [FAILED, 5, FAILED, 4, 4, 1, 6],
  [FAILED, 5, FAILED, FAILED, FAILED, 1, 6],
];

/**
 * The compiled scanner and its memory. One per process, like a shared TextEncoder: each call
 * uses the memory from its start to its return, with no await between, so calls never meet.
 */
export class IntegerListScanner {
  readonly #exports: ScannerExports;
  readonly #window: Uint8Array;

  constructor() {
    const instance = new WebAssembly.Instance(new WebAssembly.Module(Buffer.from(INTEGER_LIST_WASM, "base64")));
    if (!isScannerExports(instance.exports)) throw new TypeError("integer-list.wat does not export the scanner");
    this.#exports = instance.exports;
    const pages = Math.ceil((WINDOW_AT + MAX_WINDOW) / 65_536) - this.#exports.memory.buffer.byteLength / 65_536;
    if (pages > 0) this.#exports.memory.grow(pages);
    const memory = new Uint8Array(this.#exports.memory.buffer);
    for (const c of " \t\n\r") memory[CLASSES_AT + c.charCodeAt(0)] = SPACE;
    memory[CLASSES_AT + 0x2d] = MINUS;
    memory[CLASSES_AT + 0x30] = ZERO;
    for (let c = 0x31; c <= 0x39; c++) memory[CLASSES_AT + c] = DIGIT;
    memory[CLASSES_AT + 0x2c] = COMMA;
    memory[CLASSES_AT + 0x5d] = CLOSE;
    for (let state = 0; state < 8; state++)
      for (let c = 0; c < 8; c++) memory[TRANSITIONS_AT + state * 8 + c] = TRANSITIONS[state]?.[c] ?? FAILED;
    this.#window = memory.subarray(WINDOW_AT, WINDOW_AT + MAX_WINDOW);
  }

  listFrom(bytes: Uint8Array, from: number): IntegerListEnd | undefined {
    const scanner = this.#exports;
    scanner.reset();
    let window = FIRST_WINDOW;
    for (let at = from; at < bytes.length; at += window, window = Math.min(window * 4, MAX_WINDOW)) {
      const piece = bytes.subarray(at, at + window);
      this.#window.set(piece);
      const end = scanner.scan(WINDOW_AT, WINDOW_AT + piece.length);
      if (end >= 0) return { end: at + end - WINDOW_AT, count: scanner.count() };
      if (end === -1) return undefined;
    }
    return undefined;
  }
}

function isScannerExports(exports: Bun.WebAssembly.Exports): exports is Bun.WebAssembly.Exports & ScannerExports {
  return (
    exports["memory"] instanceof WebAssembly.Memory &&
    typeof exports["reset"] === "function" &&
    typeof exports["count"] === "function" &&
    typeof exports["scan"] === "function"
  );
}

/** The scanner, or undefined where the runtime cannot compile or run it (no WebAssembly, or no SIMD). */
export function simdIntegerListScanner(): IntegerListScanner | undefined {
  try {
    return new IntegerListScanner();
  } catch {
    return undefined;
  }
}
