/**
 * Bounds on a JSON body's shape, checked on its bytes as they arrive, before anything is
 * built from them: nesting depth (a parser's recursion, and a stringify's, grows with it)
 * and a weighted count of values (what a parsed body costs in memory grows with it, far more
 * than with its size: ~90 bytes per object, array, key or string, ~8 per number, measured on
 * Bun 1.4.5). One pass, one byte at a time, no allocation: it does not validate JSON
 * (JSON.parse does that afterwards); it only has to be exact about strings, so that brackets
 * and quotes inside them are not counted.
 */

export interface JsonShapeLimits {
  /** Deepest nesting of objects and arrays. */
  readonly maxDepth: number;
  /** Weighted values (objects, arrays, keys and strings count 1; numbers and literals 1/4) whatever the size. */
  readonly minValues: number;
  /** Bytes of body per weighted value allowed above `minValues`. */
  readonly bytesPerValue: number;
}

export type JsonShapeProblem = { readonly bound: "depth"; readonly limit: number } | { readonly bound: "values"; readonly limit: number };

/** The proxy's defaults: no request a worker can serve comes near them (see README "Request bounds"). */
export const JSON_SHAPE_LIMITS: JsonShapeLimits = { maxDepth: 128, minValues: 65_536, bytesPerValue: 64 };

/**
 * A number or literal costs about 1/10 of an object, a key or a string once parsed, but a
 * token-id prompt is parsed again in the context answer and rebuilt for the generation
 * worker (~190 bytes a token in all, measured): 1/4 caps such prompts at ~262,000 tokens.
 */
const SCALAR_WEIGHT = 1 / 4;

/** Bytes read one by one after a backslash before native searching resumes. */
const ESCAPE_WINDOW = 64;

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

/**
 * Fed a body's bytes in order (any split), reports the first bound it crosses. `maxBytes`
 * caps the values allowed while the final size is unknown (a chunked body).
 */
export class JsonShapeGuard {
  readonly #limits: JsonShapeLimits;
  readonly #ceiling: number;
  #depth = 0;
  #weight = 0;
  #inString = false;
  #escaped = false;
  /** After `[`, `,` or `:` (or at the start): the next notable byte starts a value. */
  #expectValue = true;
  #problem: JsonShapeProblem | undefined;

  constructor(limits: JsonShapeLimits, maxBytes: number) {
    this.#limits = limits;
    this.#ceiling = allowedValues(limits, maxBytes);
  }

  /** Scans the next piece; returns the first bound crossed so far (and keeps returning it). */
  feed(bytes: Uint8Array): JsonShapeProblem | undefined {
    if (this.#problem) return this.#problem;
    const length = bytes.length;
    const maxDepth = this.#limits.maxDepth;
    let depth = this.#depth;
    let weight = this.#weight;
    let inString = this.#inString;
    let escaped = this.#escaped;
    let expectValue = this.#expectValue;
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
            continue;
          }
          i = backslash;
        }
        const windowEnd = Math.min(length, i + ESCAPE_WINDOW);
        for (; i < windowEnd; i++) {
          const c = bytes[i]!;
          if (escaped) escaped = false;
          else if (c === BACKSLASH) escaped = true;
          else if (c === QUOTE) {
            inString = false;
            i++;
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
      } else if (c === OPEN_BRACE || c === OPEN_BRACKET) {
        weight += 1;
        expectValue = c === OPEN_BRACKET;
        if (++depth > maxDepth) {
          this.#problem = { bound: "depth", limit: maxDepth };
          return this.#problem;
        }
      } else if (c === CLOSE_BRACE || c === CLOSE_BRACKET) {
        depth--;
        expectValue = false;
      } else if (c === COMMA || c === COLON) {
        expectValue = true;
      } else if (expectValue) {
        // The first byte of a number or literal; the rest of it is skipped as not notable or as digits.
        weight += SCALAR_WEIGHT;
        expectValue = false;
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
    return undefined;
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
