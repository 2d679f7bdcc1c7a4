/**
 * Lossless JSON for worker traffic. Engine request ids are 63-bit integers: a plain
 * JSON.parse would round them, so integers beyond Number's safe range are kept as raw
 * JSON text and written back byte for byte.
 */

export type JsonValue = null | boolean | number | string | RawJson | JsonValue[] | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue | undefined;
}
/** A JSON fragment written verbatim by JSON.stringify (TC39 JSON.rawJSON). */
export interface RawJson {
  readonly rawJSON: string;
}

declare global {
  // TC39 JSON.parse source text access: in Bun (JavaScriptCore), not yet in TypeScript's lib.
  interface JSON {
    rawJSON(text: string): RawJson;
    isRawJSON(value: unknown): value is RawJson;
  }
}

interface ReviverContext {
  readonly source?: string;
}

function keepLargeIntegers(_key: string, value: unknown, context?: ReviverContext): unknown {
  if (typeof value === "number" && !Number.isSafeInteger(value) && context?.source !== undefined) {
    if (/^-?\d+$/.test(context.source)) return JSON.rawJSON(context.source);
  }
  return value;
}

/** 16 digits in a row: the shortest integer that can lose precision as a double. */
const MAYBE_LARGE_INTEGER = /\d{16}/;
const LONG_DIGIT_RUN = /[0-9]{16,}/;
/** Characters that, next to a digit run, make it part of a longer number (a fraction, an exponent). */
const NUMBER_CHAR = /[\d.eE+-]/;

/** JSON.parse that keeps integers beyond 2^53 exact. Throws SyntaxError like JSON.parse. */
export function parseJson(text: string): JsonValue {
  const parsed: JsonValue = JSON.parse(text);
  // Text without a long digit run cannot hold an integer a double rounds.
  const first = text.search(MAYBE_LARGE_INTEGER);
  return first < 0 ? parsed : withExactIntegers(parsed, text, first);
}

/** parseJson's value, or undefined when the text is not JSON: for what may be relayed or skipped as it came. */
export function parseJsonOrUndefined(text: string): JsonValue | undefined {
  try {
    return parseJson(text);
  } catch {
    return undefined;
  }
}

/**
 * A client's JSON: the proxy validates its numbers, then forwards them as the client wrote
 * them, so each large integer must be read from its own source text. parseJson's matching of
 * rounded doubles to digit runs elsewhere in the text can be fooled by a client (a run inside a
 * string, a number written as `1844674407.3709551616e10`), so here any long digit run sends
 * the parse through the reviver: rare in client bodies, and bounded by the shape guard.
 */
export function parseClientJson(text: string): JsonValue {
  const parsed: JsonValue = text.search(MAYBE_LARGE_INTEGER) < 0 ? JSON.parse(text) : JSON.parse(text, keepLargeIntegers);
  return parsed;
}

/**
 * The plain parse with every integer a double could not hold put back as its source text.
 * A reviver (JSON.parse source text access) would do it in one pass but calls JS for every
 * value: ~10x a plain parse, and context answers carry the prompt's token ids. Instead the
 * rounded doubles are matched to the text's long digit runs; two different runs that round
 * to the same double leave the match ambiguous, and only then does the reviver run.
 */
function withExactIntegers(parsed: JsonValue, text: string, from: number): JsonValue {
  const sources = digitRunsByValue(text, from);
  if (sources === undefined) {
    const revived: JsonValue = JSON.parse(text, keepLargeIntegers);
    return revived;
  }
  if (sources.size === 0) return parsed;
  const exact = (value: JsonValue): JsonValue => {
    if (typeof value !== "number" || Number.isSafeInteger(value) || !Number.isInteger(value)) return value;
    const source = sources.get(value);
    return source === undefined ? value : JSON.rawJSON(source);
  };
  // Iterative: an answer's nesting is not bounded here, the call stack is.
  const pending: (JsonValue[] | JsonObject)[] = [];
  const visit = (value: JsonValue): void => {
    if (typeof value === "object" && value !== null && !isRawJson(value)) pending.push(value);
  };
  const top = exact(parsed);
  visit(top);
  for (let holder = pending.pop(); holder !== undefined; holder = pending.pop()) {
    if (Array.isArray(holder)) {
      for (let i = 0; i < holder.length; i++) {
        const value = holder[i];
        if (typeof value === "number") holder[i] = exact(value);
        else if (value !== undefined) visit(value);
      }
    } else {
      for (const key in holder) {
        const value = holder[key];
        if (typeof value === "number") holder[key] = exact(value);
        else if (value !== undefined) visit(value);
      }
    }
  }
  return top;
}

/**
 * The text's whole integer literals of 16+ digits from `from` on, by their double; undefined
 * when two different ones round alike. A sign and a neighbouring fraction or exponent are
 * checked by hand: the regex engine finds plain digit runs far faster than a JS loop over the
 * text, and a non-global regex keeps no state between calls.
 */
function digitRunsByValue(text: string, from: number): Map<number, string> | undefined {
  const sources = new Map<number, string>();
  for (
    let offset = from, match = LONG_DIGIT_RUN.exec(text.slice(offset));
    match !== null;
    match = LONG_DIGIT_RUN.exec(text.slice(offset))
  ) {
    const start = offset + match.index;
    const end = start + match[0].length;
    offset = end;
    const runStart = text[start - 1] === "-" ? start - 1 : start;
    if (NUMBER_CHAR.test(text[runStart - 1] ?? " ") || NUMBER_CHAR.test(text[end] ?? " ")) continue;
    const run = text.slice(runStart, end);
    const value = Number(run);
    const known = sources.get(value);
    if (known !== undefined && known !== run && BigInt(known) !== BigInt(run)) return undefined;
    sources.set(value, run);
  }
  return sources;
}

/** A 64-bit integer as a JSON number (JSON.stringify cannot write a bigint). */
export function jsonInteger(value: bigint): RawJson {
  return JSON.rawJSON(value.toString());
}

export function isRawJson(value: unknown): value is RawJson {
  return JSON.isRawJSON(value);
}

/** Reads an integer that may be a number or a raw large integer. */
export function readInteger(value: unknown): bigint | undefined {
  if (typeof value === "number" && Number.isInteger(value)) return BigInt(value);
  if (isRawJson(value) && /^-?\d+$/.test(value.rawJSON)) return BigInt(value.rawJSON);
  return undefined;
}

export function isJsonObject(value: unknown): value is JsonObject {
  return typeof value === "object" && value !== null && !Array.isArray(value) && !isRawJson(value);
}
