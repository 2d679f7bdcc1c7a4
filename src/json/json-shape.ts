/**
 * Bounds on a JSON body's shape, checked on its bytes as they arrive, before anything is
 * built from them: nesting depth (a parser's recursion, and a stringify's, grows with it)
 * and a weighted count of values (what a parsed body costs in memory grows with it, far more
 * than with its size: ~90 bytes per object, array, key or string, ~8 per number, measured on
 * Bun 1.4.5). One pass, one byte at a time, no allocation: it does not validate JSON
 * (JSON.parse does that afterwards); it only has to be exact about strings, so that brackets
 * and quotes inside them are not counted.
 */

import { integerListFrom } from "./integer-list.ts";

export interface JsonShapeLimits {
  /** Deepest nesting of objects and arrays. */
  readonly maxDepth: number;
  /** Weighted values (objects, arrays, keys and strings count 1; numbers and literals 1/4) whatever the size. */
  readonly minValues: number;
  /** Bytes of body per weighted value allowed above `minValues`. */
  readonly bytesPerValue: number;
}

export type JsonShapeProblem = { readonly bound: "depth"; readonly limit: number } | { readonly bound: "values"; readonly limit: number };

/** The proxy's defaults: no request a worker can serve comes near them (docs/security.md, "Request bounds"). */
export const JSON_SHAPE_LIMITS: JsonShapeLimits = { maxDepth: 128, minValues: 65_536, bytesPerValue: 64 };

/**
 * A number or literal costs about 1/10 of an object, a key or a string once parsed. Numbers
 * are weighed 1/4 so that a token-id prompt stays capped at ~262,000 tokens: such a prompt
 * cost ~130 bytes a token when it was parsed again from the context answer and rebuilt for
 * the generation worker; both now go as bytes (~40 bytes a token in all, measured).
 */
const SCALAR_WEIGHT = 1 / 4;

/** Bytes read one by one after a backslash before native searching resumes. */
const ESCAPE_WINDOW = 64;

/** What the string being scanned is, for the layout. */
const VALUE = 0;
const MEMBER_KEY = 1;
const OTHER_KEY = 2;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const OPEN_BRACE = 0x7b;
const OPEN_BRACKET = 0x5b;
const CLOSE_BRACE = 0x7d;
const CLOSE_BRACKET = 0x5d;
const COMMA = 0x2c;
const COLON = 0x3a;

/** Bytes the scanner must look at outside strings; every other byte is skipped by one table read. */
const NOTABLE = new Uint8Array(256);
for (const c of '{}[]",:-0123456789tfn') NOTABLE[c.charCodeAt(0)] = 1;

/** Bytes of a number after its first (digits, sign, point, exponent), and a number's first byte. */
const IN_NUMBER = new Uint8Array(256);
for (const c of "0123456789+-.eE") IN_NUMBER[c.charCodeAt(0)] = 1;
const NUMBER_START = new Uint8Array(256);
for (const c of "-0123456789") NUMBER_START[c.charCodeAt(0)] = 1;

/**
 * Where a body's parts lie, recorded in the same pass (byte offsets into the whole body), so
 * that the body can be forwarded as its own bytes with only the proxy's members replaced, and
 * parsed without copying its long strings twice (json/json-source.ts).
 */
export interface JsonLayout {
  /** Top-level members of an object body, three numbers each: key start (its quote), key end (after its quote), member end. */
  readonly members: readonly number[];
  /** String values of at least `longStringBytes`, three numbers each: start (quote), end (after quote), 1 if it holds an escape. */
  readonly longStrings: readonly number[];
  /**
   * Top-level members' values that are lists of integer literals and came within one piece,
   * three numbers each: start (`[`), end (after `]`), items. Read once, here, for the guard's
   * count and for json-bytes.ts, which keeps or reads such lists (token ids) from the bytes.
   */
  readonly integerLists: readonly number[];
}

/** Strings at least this long are recorded (json/json-source.ts decodes them on their own). */
export const LONG_STRING_BYTES = 8 * 1024;

/**
 * Fed a body's bytes in order (any split), reports the first bound it crosses. `maxBytes`
 * caps the values allowed while the final size is unknown (a chunked body).
 */
export class JsonShapeGuard {
  readonly #limits: JsonShapeLimits;
  readonly #ceiling: number;
  readonly #longStringBytes: number;
  /** Per depth: 1 inside an object, 0 inside an array (a plain array: a typed one costs a request more to make than to fill). */
  readonly #inObject: number[] = [0];
  readonly #members: number[] = [];
  readonly #longStrings: number[] = [];
  readonly #integerLists: number[] = [];
  /** Offset of the piece being scanned within the whole body. */
  #offset = 0;
  #afterColon = false;
  #stringStart = 0;
  #stringKind = OTHER_KEY;
  #stringEscaped = false;
  #memberStart = -1;
  #keyEnd = 0;
  #depth = 0;
  #weight = 0;
  #inString = false;
  #escaped = false;
  /** After `[`, `,` or `:` (or at the start): the next notable byte starts a value. */
  #expectValue = true;
  #problem: JsonShapeProblem | undefined;

  constructor(limits: JsonShapeLimits, maxBytes: number, longStringBytes = LONG_STRING_BYTES) {
    this.#limits = limits;
    this.#ceiling = allowedValues(limits, maxBytes);
    this.#longStringBytes = longStringBytes;
  }

  /** The layout recorded so far (whole once the body has been fed and `finish` passed). */
  layout(): JsonLayout {
    return { members: this.#members, longStrings: this.#longStrings, integerLists: this.#integerLists };
  }

  /** Scans the next piece; returns the first bound crossed so far (and keeps returning it). */
  feed(bytes: Uint8Array): JsonShapeProblem | undefined {
    if (this.#problem) return this.#problem;
    const length = bytes.length;
    const maxDepth = this.#limits.maxDepth;
    const inObject = this.#inObject;
    const base = this.#offset;
    const longStringBytes = this.#longStringBytes;
    let depth = this.#depth;
    let weight = this.#weight;
    let inString = this.#inString;
    let escaped = this.#escaped;
    let expectValue = this.#expectValue;
    // The layout's state, in locals while the piece is scanned (fields cost a scan of a typical body twice as much).
    let afterColon = this.#afterColon;
    let stringStart = this.#stringStart;
    let stringKind = this.#stringKind;
    let stringEscaped = this.#stringEscaped;
    /** The next quote and backslash at or after where they were last searched from. */
    let quote = -1;
    let backslash = -1;
    let i = 0;
    while (i < length) {
      if (inString) {
        // Inside a string only quotes and backslashes matter. Up to the next backslash the
        // string is skipped by native searches (each position found once and reused), so
        // prose costs memory speed; from a backslash on, a short window is read byte by byte,
        // so a run of escapes costs no more than a plain loop.
        if (!escaped) {
          if (quote < i) quote = indexOrEnd(bytes, QUOTE, i);
          if (backslash < i) backslash = indexOrEnd(bytes, BACKSLASH, i);
          if (backslash >= quote) {
            i = quote + 1;
            inString = quote >= length;
            if (!inString && (stringKind === MEMBER_KEY || (stringKind === VALUE && base + i - stringStart >= longStringBytes))) {
              this.#stringEnded(stringKind, stringStart, base + i, stringEscaped);
            }
            continue;
          }
          i = backslash;
        }
        stringEscaped = true;
        const windowEnd = Math.min(length, i + ESCAPE_WINDOW);
        for (; i < windowEnd; i++) {
          const c = bytes[i]!;
          if (escaped) escaped = false;
          else if (c === BACKSLASH) escaped = true;
          else if (c === QUOTE) {
            inString = false;
            i++;
            if (stringKind === MEMBER_KEY || (stringKind === VALUE && base + i - stringStart >= longStringBytes)) {
              this.#stringEnded(stringKind, stringStart, base + i, stringEscaped);
            }
            break;
          }
        }
        continue;
      }
      const c = bytes[i++]!;
      if (NOTABLE[c] === 0) continue;
      if (c === QUOTE) {
        inString = true;
        weight += 1;
        expectValue = false;
        // A value (in an array, or after a colon), a top-level member's key, or another key.
        const keyed = depth > 0 && inObject[depth] === 1 && !afterColon;
        stringKind = !keyed ? VALUE : depth === 1 ? MEMBER_KEY : OTHER_KEY;
        stringStart = base + i - 1;
        stringEscaped = false;
        afterColon = false;
        if (stringKind === MEMBER_KEY) this.#memberStart = stringStart;
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        weight += 1;
        expectValue = c === OPEN_BRACKET;
        if (++depth > maxDepth) {
          this.#problem = { bound: "depth", limit: maxDepth };
          return this.#problem;
        }
        inObject[depth] = c === OPEN_BRACE ? 1 : 0;
        afterColon = false;
        // A top-level member's list of integers (token ids) is read whole at once, as its `]` would close it.
        const list = c === OPEN_BRACKET && depth === 2 && inObject[1] === 1 ? integerListFrom(bytes, i) : undefined;
        if (list !== undefined) {
          this.#integerLists.push(base + i - 1, base + list.end, list.count);
          weight += list.count * SCALAR_WEIGHT;
          i = list.end;
          depth--;
          expectValue = false;
        }
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        if (depth === 1) this.#memberEnded(base + i - 1);
        depth--;
        expectValue = false;
        afterColon = false;
      } else if (c === COMMA) {
        if (depth === 1) this.#memberEnded(base + i - 1);
        expectValue = true;
        afterColon = false;
      } else if (c === COLON) {
        expectValue = true;
        afterColon = true;
      } else if (expectValue) {
        // The first byte of a number or literal; the rest of it is skipped as not notable or as digits.
        weight += SCALAR_WEIGHT;
        expectValue = false;
        // In a list, a run of numbers (a prompt's token ids) is counted here: the same count (a
        // comma then a number's first byte) in a loop far tighter than the one above (8x on ids).
        if (inObject[depth] === 0) {
          let run = 0;
          for (;;) {
            let d = bytes[i];
            while (d !== undefined && IN_NUMBER[d] === 1) d = bytes[++i];
            if (d !== COMMA) break;
            const next = bytes[i + 1];
            if (next === undefined || NUMBER_START[next] === 0) break;
            i += 2;
            run++;
          }
          weight += run * SCALAR_WEIGHT;
        }
      }
      if (weight > this.#ceiling) {
        this.#problem = { bound: "values", limit: Math.floor(this.#ceiling) };
        return this.#problem;
      }
    }
    this.#depth = depth;
    this.#weight = weight;
    this.#inString = inString;
    this.#escaped = escaped;
    this.#expectValue = expectValue;
    this.#afterColon = afterColon;
    this.#stringStart = stringStart;
    this.#stringKind = stringKind;
    this.#stringEscaped = stringEscaped;
    this.#offset += length;
    return undefined;
  }

  /** A top-level member's key, or a long string value, closed at `end`. */
  #stringEnded(kind: number, start: number, end: number, escaped: boolean): void {
    if (kind === MEMBER_KEY) this.#keyEnd = end;
    else this.#longStrings.push(start, end, escaped ? 1 : 0);
  }

  /** A top-level member ends at `at` (its comma or the closing brace). */
  #memberEnded(at: number): void {
    if (this.#memberStart < 0 || this.#inObject[1] !== 1) return;
    this.#members.push(this.#memberStart, this.#keyEnd, at);
    this.#memberStart = -1;
  }

  /** The check once the whole body is in: the values allowed for its actual size. */
  finish(totalBytes: number): JsonShapeProblem | undefined {
    if (this.#problem) return this.#problem;
    const allowed = allowedValues(this.#limits, totalBytes);
    if (this.#weight > allowed) this.#problem = { bound: "values", limit: Math.floor(allowed) };
    return this.#problem;
  }
}

function indexOrEnd(bytes: Uint8Array, byte: number, from: number): number {
  const at = bytes.indexOf(byte, from);
  return at < 0 ? bytes.length : at;
}

function allowedValues(limits: JsonShapeLimits, bytes: number): number {
  return Math.max(limits.minValues, bytes / limits.bytesPerValue);
}
